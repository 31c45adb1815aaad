"""The kernel every domain uses: what a reference names (``resolver``), a claim's live
successor (``lineage``), token counts (``tokens``), running an external JSON-batch program
(``command``) and a claim as JSON (``claim_form``).

Architecture invariant: the kernel imports no other part of ``services``.
"""
