"""Interop tests with the real ACP TypeScript SDK, and hostile Agents against the conformance runner."""
