"""Renderers of the `acp-v2-schema` Python package: the models (through datamodel-code-generator), their open
unions and salvage table, the protocol names, the retry module and the packaging files."""
