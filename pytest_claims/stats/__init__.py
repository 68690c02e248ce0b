"""The judging rules, pure Python: an absence as an equivalence, a print's precision, and the
models of an estimate's uncertainty (:mod:`.equivalence`, :mod:`.printed`, :mod:`.uncertainty`)."""
