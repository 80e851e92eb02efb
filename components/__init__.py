"""The llm-serving components and their shared facts.

Kept light on purpose: the policy pack imports ``components.facts``, ``components.inventory``
and ``components.modelfacts`` (plain data and pydantic), so nothing here imports Pulumi or
pulumi_kubernetes. The program's modules (``config``, ``workload``, ``vllm``, ``service``,
``network``, ``stack``) are imported by name where they are used.
"""
