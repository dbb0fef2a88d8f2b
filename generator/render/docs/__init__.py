"""Renderers of the docs pages under site/reference/: methods, types, differences, diagnostic codes and
compatibility rules."""
