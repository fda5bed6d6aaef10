"""Run folders as training data: ``export-sft`` (``sft.py``), from the run folder's readers
(``sources.py``): conversations (``conversation.py``), single-turn pairs (``pairs.py``), the split
(``split.py``) and the data card (``card.py``)."""
