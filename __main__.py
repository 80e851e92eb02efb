"""The llm-serving program: the namespace's GPU workloads, Services and ingress policy.

Reads the ``llm-serving:*`` stack config (``Pulumi.<stack>.yaml``), validates it with
``stackfile.load_stack_config`` (a bad config stops here with every problem listed and
no traceback), builds the components (``stackfile.build``; the objects of
``llm-serving:left_alone`` are reported, never registered) and exports each Service's in-cluster
URLs, the card table per node and the objects left alone. With ``llm-serving:render_yaml_to_directory``
set (relative to the project directory, the CLI's working directory), a kubernetes provider
with ``render_yaml_to_directory`` writes the manifests there for ArgoCD instead of applying
them; every component gets it through ``ResourceOptions(providers=[...])``. A workload's Secret
(``secret_env``) is never rendered: in render mode it alone is applied to the cluster by a provider
of its own (``cluster-secrets``, the kubeconfig of the environment), so the directory ArgoCD applies
holds only objects that reference it by name (docs/secrets.md).
"""

import pulumi

from core.base import inputs
from stackfile import ConfigError, load_stack_config
from stackfile.build import build_stack, config_from_pulumi, secrets_to, stack_outputs


def _written() -> "dict | None":
    """The stack file's config as written (``secure:`` still encrypted): where each secret sits."""
    from tools.offline.manifests import InputError, load_stack_file

    try:
        return load_stack_file(inputs.PROJECT_DIR / f"Pulumi.{pulumi.get_stack()}.yaml")
    except InputError:
        return None  # no stack file (config from elsewhere): secret_env values are taken as secret


try:
    # Relative config_json paths resolve against the project directory (core/rulebook/).
    config = load_stack_config(
        config_from_pulumi(_written()), base_dir=inputs.PROJECT_DIR, source=f"the {pulumi.get_stack()} stack config"
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
    if any(wl.secret_env for wl in config.workloads.values()):
        # The provider writes secret values in plain text (pulumi-kubernetes PR #936): Secrets stay
        # with Pulumi, applied to the cluster; ArgoCD's directory never holds them.
        opts = pulumi.ResourceOptions.merge(opts, secrets_to(k8s.Provider("cluster-secrets")))

stack = build_stack(config, opts)
for key, value in stack_outputs(config, stack).items():
    pulumi.export(key, value)
