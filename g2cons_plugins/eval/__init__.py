"""The evaluation harness (not the method): Context Recall and selection quality of several methods
(:mod:`.evaluation`), the host KGs' sweep (:mod:`.host_eval`; the hosts and their protocol are in
:mod:`g2cons_plugins.hosts`), EM/F1 of an answering LLM (:mod:`.answering`) and the Markdown report with plots
(:mod:`.report`). Used by ``g2cons eval``; nothing in the method or the hosts imports it."""

__all__: list[str] = []
