"""The llm-serving components and their shared facts.

The program: ComponentResources and the stack-file schema. The plain modules the policy pack
shares (facts, inventory, model facts, capacity, rules) live in ``core/``; nothing in this
package's ``__init__`` imports Pulumi or pulumi_kubernetes. The program's modules (``config``, ``workload``, ``vllm``, ``service``,
``network``, ``stack``) are imported by name where they are used.
"""
