"""Every output path, in one place. Renderers, the writer, the docs hooks and the tests import them from here.

Paths are relative to the project root and use forward slashes. The tree:

    generated/                          GENERATED (managed: generate replaces it whole)
    ├── retry-policy.json               POLICY
    ├── schema/schema[.unstable].json   SCHEMA_STABLE, SCHEMA_UNSTABLE
    ├── schema/meta[.unstable].json     META_STABLE, META_UNSTABLE
    ├── typescript/retry-policy.ts      TYPESCRIPT
    ├── rust/retry_policy.rs            RUST
    ├── conformance/                    CONFORMANCE: KEY_VECTORS, DECISION_VECTORS, TRACES
    └── python/                         PYTHON_DIST
        └── acp_v2_schema/              PYTHON_PACKAGE: PYTHON_RETRY, PYTHON_PROTOCOL, PYTHON_READER,
                                        PYTHON_MODELS/ (PYTHON_OPEN_UNIONS, PYTHON_SALVAGE),
                                        PYTHON_DATA/
    site/reference/                     REFERENCE (managed)
    ├── retry-classes.md                RETRY_TABLE_PAGE
    ├── sdk-tables.md                   SDK_TABLES_PAGE
    ├── upstream-differences.md         DIFFERENCES_PAGE
    ├── compatibility-rules.md          COMPATIBILITY_PAGE
    ├── diagnostic-codes.md             DIAGNOSTIC_CODES_PAGE
    ├── conformance-traces.md           TRACES_PAGE
    ├── conformance/                    SITE_CONFORMANCE: copies of the vectors, for links
    ├── methods/<slug>.md               method_page(slug)
    └── types/<family>.md, index.md     type_page(family), TYPES_INDEX_PAGE
"""

from __future__ import annotations

from posixpath import basename

GENERATED = "generated"
SITE = "site"
REFERENCE = f"{SITE}/reference"
# Directories that hold nothing but generated files: generate replaces them whole, check compares them whole.
MANAGED_ROOTS = (GENERATED, REFERENCE)

POLICY = f"{GENERATED}/retry-policy.json"
SCHEMA_STABLE = f"{GENERATED}/schema/schema.json"
SCHEMA_UNSTABLE = f"{GENERATED}/schema/schema.unstable.json"
META_STABLE = f"{GENERATED}/schema/meta.json"
META_UNSTABLE = f"{GENERATED}/schema/meta.unstable.json"
TYPESCRIPT = f"{GENERATED}/typescript/retry-policy.ts"
RUST = f"{GENERATED}/rust/retry_policy.rs"
CONFORMANCE = f"{GENERATED}/conformance"
KEY_VECTORS = f"{CONFORMANCE}/idempotency-key.json"
DECISION_VECTORS = f"{CONFORMANCE}/retry-decisions.json"
TRACES = f"{CONFORMANCE}/idempotency-traces.json"

PYTHON_DIST = f"{GENERATED}/python"
PYTHON_IMPORT = "acp_v2_schema"
PYTHON_PACKAGE = f"{PYTHON_DIST}/{PYTHON_IMPORT}"
PYTHON_RETRY = f"{PYTHON_PACKAGE}/retry.py"
PYTHON_PROTOCOL = f"{PYTHON_PACKAGE}/protocol.py"
PYTHON_READER = f"{PYTHON_PACKAGE}/reader.py"
PYTHON_MODELS = f"{PYTHON_PACKAGE}/models"
PYTHON_DATA = f"{PYTHON_PACKAGE}/data"
PYTHON_OPEN_UNIONS = f"{PYTHON_MODELS}/_open_unions.py"
PYTHON_SALVAGE = f"{PYTHON_MODELS}/_salvage.py"

# Pages, as files under site/ and as the paths mkdocs serves them at (relative to the site root).
RETRY_TABLE_PAGE = f"{REFERENCE}/retry-classes.md"
SDK_TABLES_PAGE = f"{REFERENCE}/sdk-tables.md"
DIFFERENCES_PAGE = f"{REFERENCE}/upstream-differences.md"
COMPATIBILITY_PAGE = f"{REFERENCE}/compatibility-rules.md"
DIAGNOSTIC_CODES_PAGE = f"{REFERENCE}/diagnostic-codes.md"
TRACES_PAGE = f"{REFERENCE}/conformance-traces.md"
SITE_CONFORMANCE = f"{REFERENCE}/conformance"
METHODS_DIR = f"{REFERENCE}/methods"
TYPES_DIR = f"{REFERENCE}/types"
TYPES_INDEX_PAGE = f"{TYPES_DIR}/index.md"


def method_page(slug: str) -> str:
    """The Markdown file of a method entry's page."""
    return f"{METHODS_DIR}/{slug}.md"


def type_page(family: str) -> str:
    """The Markdown file of a type family's page."""
    return f"{TYPES_DIR}/{family}.md"


def site_copy(path: str) -> str:
    """Where the docs site keeps its copy of a conformance file."""
    return f"{SITE_CONFORMANCE}/{basename(path)}"


def served(page: str) -> str:
    """The URL path (relative to the site root) that mkdocs serves a page under site/ at: `x/y.md` -> `x/y/`."""
    relative = page.removeprefix(f"{SITE}/")
    return relative.removesuffix("index.md") if relative.endswith("index.md") else relative.removesuffix(".md") + "/"


def docs_relative(page: str) -> str:
    """A page's path inside the docs directory (site/), as mkdocs names its source files."""
    return page.removeprefix(f"{SITE}/")
