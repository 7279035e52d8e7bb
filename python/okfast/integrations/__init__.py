"""Bridges from okfast to agent frameworks, each in its own extra:

- :mod:`okfast.integrations.mcp`: the ``okfast mcp`` server (``okfast[mcp]``);
- :mod:`okfast.integrations.langchain`: ``OkfastRetriever`` for LangChain
  (``okfast[langchain]``);
- :mod:`okfast.integrations.llama_index`: ``OkfastRetriever`` for LlamaIndex
  (``okfast[llama-index]``).

Nothing here is imported by ``import okfast``, and this package imports none
of those frameworks: each is imported only by the module that needs it.
"""
