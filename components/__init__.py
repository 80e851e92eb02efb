"""The llm-serving ComponentResources, each with its typed args (pydantic models).

They import only ``core`` (and Pulumi, pulumi_kubernetes, pydantic): the stack file
(``stackfile/``) feeds them, never the other way round. Nothing in this package's ``__init__``
imports Pulumi or pulumi_kubernetes; the modules (``workload``, ``vllm``, ``service``,
``network``) are imported by name where they are used.
"""
