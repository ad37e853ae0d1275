"""``slu``: zero-shot cross-lingual intent detection and slot filling on MASSIVE (ZSJoint, CoSDA-ML)."""
