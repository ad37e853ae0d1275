"""One typed model per section of ``conf/`` (pydantic): what each parameter may be, checked when a run starts,
completed by editors (JSON Schema) and listed in the docs (generated)."""
