"""Renderers of the published schemas: the two JSON Schema bundles and ACP's `meta.json` method maps."""
