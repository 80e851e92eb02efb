"""Reconciling and validating the policy pack config, as the CLI's ReconcilePolicyPackConfig
does (schema defaults, then the pack's initial config, then --policy-pack-config with "all"),
plus the runner's stricter checks (unknown policy names and undeclared properties).

Pure functions over a hand-built AnalyzerInfo: no pack process.
"""

from __future__ import annotations

import json

import pytest
from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2 as pb

from tools.analyze import PolicyConfigError, load_policy_pack_config, policy_configs, reconcile_policy_config


def info() -> pb.AnalyzerInfo:
    schema = pb.PolicyConfigSchema(required=["maxCards"])
    schema.properties.update({
        "maxCards": {"type": "integer", "minimum": 1, "default": 4},
        "nodes": {"type": "array", "items": {"type": "string"}},
    })
    a = pb.AnalyzerInfo(name="pack", supportsConfig=True)
    a.policies.append(pb.PolicyInfo(name="cards", enforcementLevel=pb.MANDATORY, configSchema=schema))
    a.policies.append(pb.PolicyInfo(name="probe", enforcementLevel=pb.ADVISORY))
    return a


def test_defaults_and_levels_from_the_pack():
    assert reconcile_policy_config(info(), None) == {
        "cards": ("mandatory", {"maxCards": 4}),
        "probe": ("advisory", {}),
    }


def test_given_config_overrides_defaults_and_all_sets_every_level():
    got = reconcile_policy_config(info(), {"all": "advisory", "cards": {"maxCards": 8, "nodes": ["worker-1"]}})
    assert got == {"cards": ("advisory", {"maxCards": 8, "nodes": ["worker-1"]}), "probe": ("advisory", {})}
    got = reconcile_policy_config(info(), {"all": {"enforcementLevel": "disabled"}, "probe": "mandatory"})
    assert got == {"cards": ("disabled", {"maxCards": 4}), "probe": ("mandatory", {})}


def test_the_packs_initial_config_applies_before_the_given_config():
    a = info()
    props = struct_pb2.Struct()
    props.update({"maxCards": 2})
    a.initialConfig["cards"].CopyFrom(pb.PolicyConfig(enforcementLevel=pb.ADVISORY, properties=props))
    assert reconcile_policy_config(a, None)["cards"] == ("advisory", {"maxCards": 2})
    assert reconcile_policy_config(a, {"cards": {"maxCards": 3}})["cards"] == ("advisory", {"maxCards": 3})


@pytest.mark.parametrize(
    "given, expected",
    [
        ({"cards": "strict"}, 'cards.enforcementLevel = "strict": \'strict\' is not one of'),
        ({"all": "strict"}, 'all.enforcementLevel = "strict": not an enforcement level; fix: use one of advisory, mandatory, remediate, disabled'),
        ({"cards": {"maxCards": "4"}}, "cards.maxCards = \"4\": '4' is not of type 'integer' (rule type: \"integer\")"),
        ({"cards": {"nodes": ["worker-1", 2]}}, "cards.nodes.1 = 2: 2 is not of type 'string'"),
        ({"cards": {"maxCard": 4}}, "cards.maxCard: Additional properties are not allowed"),
        ({"all": {"maxCards": 4}}, 'all.maxCards = 4: "all" takes only enforcementLevel'),
        ({"card": "mandatory"}, "card: no policy of pack pack has this name; fix: use one of cards, probe"),
        ({"cards": ["mandatory"]}, 'cards = ["mandatory"]: a policy\'s config is a level string or an object'),
    ],
)
def test_each_bad_entry_is_named_with_its_path_value_rule_and_fix(given, expected):
    with pytest.raises(PolicyConfigError) as err:
        reconcile_policy_config(info(), given)
    assert len(err.value.problems) == 1, err.value.problems
    assert expected in err.value.problems[0]
    assert "fix:" in err.value.problems[0]


def test_a_required_property_without_default_is_reported():
    a = info()
    del a.policies[0].configSchema.properties["maxCards"]["default"]
    with pytest.raises(PolicyConfigError) as err:
        reconcile_policy_config(a, None)
    assert err.value.problems == ["cards.maxCards: missing ('maxCards' is a required property); fix: set it in the policy pack config"]


def test_configure_request_carries_every_policy():
    req = policy_configs(reconcile_policy_config(info(), {"probe": "disabled"}))
    assert req["cards"].enforcementLevel == pb.MANDATORY
    assert dict(req["cards"].properties) == {"maxCards": 4.0}
    assert req["probe"].enforcementLevel == pb.DISABLED


def test_loading_a_config_file(tmp_path):
    f = tmp_path / "ppc.json"
    f.write_text(json.dumps({"cards": "advisory"}))
    assert load_policy_pack_config(f) == {"cards": "advisory"}
    f.write_text("")
    assert load_policy_pack_config(f) == {}
    f.write_text("[1]")
    with pytest.raises(PolicyConfigError, match="the top level is a JSON array, not an object"):
        load_policy_pack_config(f)
    f.write_text("{nope")
    with pytest.raises(PolicyConfigError, match="not valid JSON"):
        load_policy_pack_config(f)
    with pytest.raises(PolicyConfigError, match="cannot read the policy pack config"):
        load_policy_pack_config(tmp_path / "missing.json")


def test_inline_json_gets_told_that_the_option_takes_a_file(tmp_path):
    """Newcomer finding: passing the JSON itself failed with only 'No such file'."""
    with pytest.raises(PolicyConfigError) as err:
        load_policy_pack_config('{"served-model-name-unique": "mandatory"}')
    assert "inline JSON is not accepted" in str(err.value.problems[0])
    with pytest.raises(PolicyConfigError) as err:
        load_policy_pack_config(tmp_path / "missing.json")
    assert "inline JSON" not in str(err.value.problems[0])
