// Test harness for the generated Rust retry table, compiled by tests/sdk/conftest.py with `rustc --test` next to
// a copy of generated/rust/retry_policy.rs and a vectors.rs written from the conformance JSON. It checks what it
// can on its own (names round-trip, lookups agree with the table) and prints its answers to the shared vectors
// as JSON, which the Python test compares with the expected outcomes.

// Dead-code analysis would flag the table's fields that no test reads; the library build of the same file, with
// every warning denied, is checked separately.
#[allow(dead_code)]
#[path = "retry_policy.rs"]
mod retry_policy;

use retry_policy::{
    lookup, may_resend, may_resend_with, retry_class, validate_idempotency_key, Decision, FailureKind,
    MessageKind, ResendOptions, RetryClass, ENTRIES, FALLBACK_CLASS,
};

#[path = "json_reader.rs"]
mod json_reader;

use json_reader::Json;

pub struct KeyVector {
    pub name: String,
    /// None when a Rust &str cannot hold the value (not a string, or a lone surrogate): in Rust such a value
    /// never reaches the validator, because a JSON parser rejects it first.
    pub value: Option<String>,
}

pub struct DecisionCase {
    pub method: String,
    pub kind: String,
    pub variant: Option<String>,
    pub failure: String,
    pub error_code: Option<i64>,
    pub has_key: bool,
    pub allow_duplicates: bool,
}

/// A conformance file, copied next to the harness by tests/sdk/conftest.py and read as it is.
fn conformance(name: &str) -> Json {
    Json::read(&std::fs::read_to_string(name).unwrap_or_else(|e| panic!("{name}: {e}")))
}

fn key_vectors(file: &Json) -> Vec<KeyVector> {
    let vectors = file.get("vectors").items().iter();
    vectors
        .map(|v| KeyVector { name: v.get("name").text().expect("a name").to_string(), value: v.get("value").text().map(str::to_string) })
        .collect()
}

fn decision_cases(file: &Json) -> Vec<DecisionCase> {
    let text = |c: &Json, key: &str| c.get(key).text().expect("a string").to_string();
    file.get("cases")
        .items()
        .iter()
        .map(|c| DecisionCase {
            method: text(c, "method"),
            kind: text(c, "kind"),
            variant: c.get("variant").text().map(str::to_string),
            failure: text(c, "failure"),
            error_code: c.get("errorCode").integer(),
            has_key: c.get("hasKey").flag(),
            allow_duplicates: c.get("allowDuplicates").flag(),
        })
        .collect()
}

fn json_str(value: Option<&str>) -> String {
    // Only names and reasons pass through here: ASCII without quotes or backslashes.
    value.map_or_else(|| "null".to_string(), |v| format!("\"{v}\""))
}

#[test]
fn names_round_trip() {
    for class in RetryClass::ALL {
        assert_eq!(RetryClass::from_name(class.name()), Some(class));
    }
    for failure in FailureKind::ALL {
        assert_eq!(FailureKind::from_name(&failure.to_string()), Some(failure));
    }
    for decision in Decision::ALL {
        assert_eq!(Decision::from_name(decision.name()), Some(decision));
    }
    for kind in MessageKind::ALL {
        assert_eq!(MessageKind::from_name(kind.name()), Some(kind));
    }
    assert_eq!(RetryClass::from_name("no-such-class"), None);
}

#[test]
fn lookup_finds_every_entry_and_nothing_else() {
    for entry in ENTRIES.iter() {
        let found = lookup(entry.method, entry.kind).expect("every entry can be looked up");
        assert!(std::ptr::eq(found, entry));
        assert_eq!(retry_class(entry.method, entry.kind, None), entry.retry_class);
        for (variant, class) in entry.variants {
            assert_eq!(retry_class(entry.method, entry.kind, Some(variant)), *class);
        }
    }
    assert!(lookup("_vendor/custom", MessageKind::Request).is_none());
    assert_eq!(retry_class("_vendor/custom", MessageKind::Request, None), FALLBACK_CLASS);
}

#[test]
fn key_errors_say_why() {
    let long = "k".repeat(retry_policy::IDEMPOTENCY_KEY_MAX_LENGTH + 1);
    let error = validate_idempotency_key(&long).unwrap_err();
    assert_eq!(error.reason(), "too-long");
    assert!(error.to_string().contains("code points"));
    let boxed: Box<dyn std::error::Error> = Box::new(error);
    assert!(!boxed.to_string().is_empty());
    assert_eq!(validate_idempotency_key("k"), Ok("k"));
}

#[test]
fn answers() {
    let key_file = conformance("idempotency-key.json");
    let mut keys = Vec::new();
    for vector in key_vectors(&key_file) {
        let answer = match vector.value.as_deref() {
            Some(value) => match validate_idempotency_key(value) {
                Ok(key) => {
                    assert_eq!(key, value, "{}: a valid key comes back unchanged", vector.name);
                    "{\"held\": true, \"valid\": true, \"reason\": null}".to_string()
                }
                Err(error) => format!(
                    "{{\"held\": true, \"valid\": false, \"reason\": {}}}",
                    json_str(Some(error.reason()))
                ),
            },
            None => "{\"held\": false, \"valid\": false, \"reason\": null}".to_string(),
        };
        keys.push(answer);
    }
    let mut decisions = Vec::new();
    for case in decision_cases(&conformance("retry-decisions.json")) {
        let kind = MessageKind::from_name(&case.kind).expect("a known kind");
        let failure = FailureKind::from_name(&case.failure).expect("a known failure kind");
        let options = ResendOptions {
            variant: case.variant.as_deref(),
            allow_duplicates: case.allow_duplicates,
            error_code: case.error_code,
        };
        let answer = may_resend_with(&case.method, kind, failure, case.has_key, options);
        if case.variant.is_none() && !case.allow_duplicates && case.error_code.is_none() {
            assert_eq!(answer, may_resend(&case.method, kind, failure, case.has_key));
        }
        decisions.push(answer.to_string());
    }
    let comparisons: Vec<String> = key_file
        .get("comparisons")
        .items()
        .iter()
        .map(|pair| (pair.get("a").text() == pair.get("b").text()).to_string())
        .collect();
    println!("ANSWERS-BEGIN");
    println!(
        "{{\"keys\": [{}], \"decisions\": [{}], \"comparisons\": [{}]}}",
        keys.join(", "),
        decisions.join(", "),
        comparisons.join(", ")
    );
    println!("ANSWERS-END");
}
