"""The offline twin of the Pulumi CLI: the program under the mock runtime (mockrun), the policy
pack's analyzer host over gRPC (packproc), the rendering and its diff (render), the input readers
(manifests, yamlload), the summary, transition and report of a preview. Used by the commands in ``tools/``; imports none of them."""
