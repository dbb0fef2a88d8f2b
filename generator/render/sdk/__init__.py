"""Renderers of what SDKs read: the language-neutral retry table, the TypeScript and Rust tables, the conformance
vectors and traces, and the page that shows the tables."""
