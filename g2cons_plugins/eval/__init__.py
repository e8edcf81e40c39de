"""The evaluation harness (not the method): Context Recall and selection quality of several methods
(:mod:`.evaluation`), host KG plug-ins and their sweep (:mod:`.hosts`, :mod:`.host_eval`), EM/F1 of an answering
LLM (:mod:`.answering`), an offline entity graph used by the NER host (:mod:`.entity_graph`) and the Markdown
report with plots (:mod:`.report`). Used by ``g2cons eval``; nothing in the method imports it."""
