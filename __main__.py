"""The llm-serving program: the namespace's GPU workloads, Services and ingress policy.

Reads the ``llm-serving:*`` stack config (``Pulumi.<stack>.yaml``), validates it with
``stackfile.load_stack_config`` (a bad config stops here with every problem listed and
no traceback), builds the components (``stackfile.build``; the objects of
``llm-serving:left_alone`` are reported, never registered) and exports each Service's in-cluster
URLs, the card table per node and the objects left alone. With ``llm-serving:render_yaml_to_directory``
set (relative to the project directory, the CLI's working directory), a kubernetes provider
with ``render_yaml_to_directory`` writes the manifests there for ArgoCD instead of applying
them; every component gets it through ``ResourceOptions(providers=[...])``.
"""

import pulumi

from core import rules
from stackfile import ConfigError, load_stack_config
from stackfile.build import build_stack, config_from_pulumi, stack_outputs

try:
    # Relative config_json paths resolve against the project directory (core/rules.py).
    config = load_stack_config(
        config_from_pulumi(), base_dir=rules.PROJECT_DIR, source=f"the {pulumi.get_stack()} stack config"
    )
except ConfigError as err:
    raise pulumi.RunError(err.render()) from None

opts = None
if config.render_yaml_to_directory:
    import pulumi_kubernetes as k8s

    # kubeconfig="": the SDK fills an unset kubeconfig from $KUBECONFIG, and the provider refuses
    # a kubeconfig beside renderYamlToDirectory (found by the real suite, tests/real/).
    render = k8s.Provider("render-yaml", render_yaml_to_directory=config.render_yaml_to_directory, kubeconfig="")
    opts = pulumi.ResourceOptions(providers=[render])

stack = build_stack(config, opts)
for key, value in stack_outputs(config, stack).items():
    pulumi.export(key, value)
