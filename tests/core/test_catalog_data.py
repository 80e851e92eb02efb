"""The catalogs as data (core/data/): the committed JSON Schemas are what the pydantic types
generate, every entry validates against them, the project's strict YAML loader reads the same
data, and a bad entry is refused naming the file, the entry, the key and the value."""

from __future__ import annotations

import re

import jsonschema
import pytest

from core.catalog import cards, datafile, images, modelfacts
from core.catalog import schemas as catalogs
from core.judging.problems import ConfigError
from tools.offline.yamlload import load_documents

CATALOGS = {"models": modelfacts.CATALOG_FILE, "cards": cards.CARDS_FILE, "images": images.IMAGES_FILE}


def _strict(name: str) -> object:
    """``core/data/<name>.yaml`` read by the project's strict loader (each key once, plain tags)."""
    (doc,) = load_documents(CATALOGS[name].path.read_text(encoding="utf-8"), f"core/data/{name}.yaml")
    return doc


@pytest.mark.parametrize("name", sorted(CATALOGS))
def test_the_committed_schema_is_what_the_types_generate(name):
    assert [c.name for c in catalogs.catalogs()] == ["models", "cards", "images"]
    committed = CATALOGS[name].schema_path.read_text(encoding="utf-8")
    assert committed == CATALOGS[name].schema_text(), (
        f"core/data/{name}.schema.json is stale; regenerate: python -m core.catalog.schemas")


@pytest.mark.parametrize("name", sorted(CATALOGS))
def test_every_entry_validates_against_the_schema(name):
    data = _strict(name)
    schema = CATALOGS[name].schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(data)
    entries = data.values() if isinstance(data, dict) else data
    assert len(entries) == len(CATALOGS[name].load()) > 0  # every entry of the file is loaded, none dropped
    assert all(e["source"].strip() for e in entries)


def test_the_loaded_catalogs_are_the_files_entries():
    models = _strict("models")
    assert list(modelfacts.CATALOG) == list(models)
    for key, facts in modelfacts.CATALOG.items():
        assert type(facts) is modelfacts.ModelFacts  # source and note stay in the file
        given = {k: v for k, v in models[key].items() if k not in ("source", "note")}
        assert facts.model_dump(exclude_unset=True) == given
    assert modelfacts.CATALOG["Qwen/Qwen3-30B-A3B-GPTQ-Int4"].quantization == modelfacts.Quantization(
        method="gptq", bits=4, group_size=128)
    for card, entry in zip(cards.CARDS, _strict("cards"), strict=True):
        expected = {**entry, **({"aliases": tuple(entry["aliases"])} if "aliases" in entry else {})}
        assert card.model_dump(exclude_unset=True) == expected
    assert cards.lookup("Tesla V100-PCIE-32GB").cuda_total_bytes == 34_089_730_048


def test_each_measured_card_total_is_the_figure_its_source_quotes():
    """The logs print GiB to two decimals (the V100's deviceQuery also the bytes)."""
    for card in cards.CARDS:
        if card.measured:
            quoted = float(re.search(r"(\d+\.\d\d) ?GiB", card.source).group(1))
            assert abs(card.cuda_total_gib - quoted) <= 0.005, card.product


def _write(tmp_path, monkeypatch, name: str, old: str, new: str) -> None:
    text = CATALOGS[name].path.read_text(encoding="utf-8")
    assert old in text
    (tmp_path / f"{name}.yaml").write_text(text.replace(old, new, 1), encoding="utf-8")
    monkeypatch.setattr(datafile, "DATA_DIR", tmp_path)


def test_a_bad_model_entry_names_the_file_entry_key_and_value(tmp_path, monkeypatch):
    _write(tmp_path, monkeypatch, "models", "  num_hidden_layers: 40\n", "  num_hidden_layers: 0\n  num_layers: 40\n")
    with pytest.raises(ConfigError) as caught:
        modelfacts.CATALOG_FILE.load()
    text = str(caught.value)
    assert text.startswith("Cannot load core/data/models.yaml: 2 problems.")
    assert ("core/data/models.yaml, entry Qwen/Qwen3-14B, key num_hidden_layers\n  value: 0\n"
            "  rule:  Input should be greater than 0\n"
            "  fix:   correct the entry in core/data/models.yaml (its schema: core/data/models.schema.json)") in text
    assert "entry Qwen/Qwen3-14B, key num_layers\n  value: 40\n  rule:  Extra inputs are not permitted" in text


def test_a_bad_card_entry_is_named_by_its_product(tmp_path, monkeypatch):
    _write(tmp_path, monkeypatch, "cards", '  compute_capability: "7.5"\n', "  compute_capability: 7.5\n")
    with pytest.raises(ConfigError) as caught:
        cards.CARDS_FILE.load()
    assert ("core/data/cards.yaml, entry Tesla-T4 (item 2), key compute_capability\n  value: 7.5\n"
            "  rule:  Input should be a valid string") in str(caught.value)


def test_two_cards_named_alike_are_refused():
    v100 = cards.CARDS[0]
    with pytest.raises(ConfigError, match=r"entry Tesla-V100-PCIE-32GB\n  value: \"Tesla V100 PCIe 32GB\"\n"
                                          r"  rule:  names the same card as 'Tesla-V100-PCIE-32GB'"):
        cards._by_key((v100.model_copy(update={"aliases": (*v100.aliases, "Tesla V100 PCIe 32GB")}),))


def test_the_image_catalog_knows_vllm_runs_as_root():
    """vllm/vllm-openai sets no USER (its Dockerfile): root, HOME /root, entrypoint ``vllm serve``."""
    vllm = images.image_facts("docker.io/vllm/vllm-openai:v0.11.0@sha256:" + "0" * 64)
    assert vllm is not None and (vllm.user, vllm.uid, vllm.home, vllm.entrypoint) == ("root", 0, "/root", ("vllm", "serve"))
    assert images.image_facts("ghcr.io/example/server:1.0") is None
