// A small JSON reader for the Rust harness, which builds with the standard library alone (rustc --test, no
// crates). It reads the conformance files as they are. Strings are decoded to UTF-16 units first, so that a lone
// surrogate (which a Rust String cannot hold) comes out as Text(None) instead of failing the whole file.

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(f64),
    /// `None`: a string that is not well-formed Unicode (it holds a lone surrogate).
    Text(Option<String>),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn read(text: &str) -> Json {
        let mut reader = Reader { bytes: text.as_bytes(), at: 0 };
        let value = reader.value();
        reader.space();
        assert_eq!(reader.at, reader.bytes.len(), "data after the JSON value");
        value
    }

    pub fn get(&self, key: &str) -> &Json {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v).unwrap_or(&Json::Null),
            _ => panic!("not an object: {self:?}"),
        }
    }

    pub fn items(&self) -> &[Json] {
        match self {
            Json::Array(items) => items,
            _ => panic!("not an array: {self:?}"),
        }
    }

    pub fn text(&self) -> Option<&str> {
        match self {
            Json::Text(Some(text)) => Some(text),
            _ => None,
        }
    }

    pub fn flag(&self) -> bool {
        matches!(self, Json::Bool(true))
    }

    pub fn integer(&self) -> Option<i64> {
        match self {
            Json::Number(n) => Some(*n as i64),
            _ => None,
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn space(&mut self) {
        while self.at < self.bytes.len() && matches!(self.bytes[self.at], b' ' | b'\n' | b'\r' | b'\t') {
            self.at += 1;
        }
    }

    fn take(&mut self, expected: u8) {
        assert_eq!(self.bytes[self.at], expected, "unexpected byte at {}", self.at);
        self.at += 1;
    }

    fn word(&mut self, word: &str, value: Json) -> Json {
        assert!(self.bytes[self.at..].starts_with(word.as_bytes()), "bad literal at {}", self.at);
        self.at += word.len();
        value
    }

    fn value(&mut self) -> Json {
        self.space();
        match self.bytes[self.at] {
            b'{' => {
                self.at += 1;
                let mut fields = Vec::new();
                self.space();
                if self.bytes[self.at] == b'}' {
                    self.at += 1;
                    return Json::Object(fields);
                }
                loop {
                    self.space();
                    let key = self.string().expect("object keys are well-formed");
                    self.space();
                    self.take(b':');
                    fields.push((key, self.value()));
                    self.space();
                    if self.bytes[self.at] == b',' {
                        self.at += 1;
                    } else {
                        self.take(b'}');
                        return Json::Object(fields);
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                self.space();
                if self.bytes[self.at] == b']' {
                    self.at += 1;
                    return Json::Array(items);
                }
                loop {
                    items.push(self.value());
                    self.space();
                    if self.bytes[self.at] == b',' {
                        self.at += 1;
                    } else {
                        self.take(b']');
                        return Json::Array(items);
                    }
                }
            }
            b'"' => Json::Text(self.string()),
            b't' => self.word("true", Json::Bool(true)),
            b'f' => self.word("false", Json::Bool(false)),
            b'n' => self.word("null", Json::Null),
            _ => {
                let start = self.at;
                while self.at < self.bytes.len() && b"+-.0123456789eE".contains(&self.bytes[self.at]) {
                    self.at += 1;
                }
                let text = std::str::from_utf8(&self.bytes[start..self.at]).expect("ASCII");
                Json::Number(text.parse().unwrap_or_else(|_| panic!("bad number {text:?}")))
            }
        }
    }

    /// A string literal, or None when its code points are not well-formed Unicode.
    fn string(&mut self) -> Option<String> {
        self.take(b'"');
        let mut units: Vec<u16> = Vec::new();
        loop {
            let byte = self.bytes[self.at];
            match byte {
                b'"' => {
                    self.at += 1;
                    return String::from_utf16(&units).ok();
                }
                b'\\' => {
                    let escape = self.bytes[self.at + 1];
                    self.at += 2;
                    let unit = match escape {
                        b'"' => 0x22,
                        b'\\' => 0x5c,
                        b'/' => 0x2f,
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => 0x0a,
                        b'r' => 0x0d,
                        b't' => 0x09,
                        b'u' => {
                            let hex = std::str::from_utf8(&self.bytes[self.at..self.at + 4]).expect("ASCII");
                            self.at += 4;
                            u16::from_str_radix(hex, 16).expect("four hex digits")
                        }
                        other => panic!("bad escape \\{}", other as char),
                    };
                    units.push(unit);
                }
                _ => {
                    // One UTF-8 sequence, its length told by its first byte.
                    let length = match byte {
                        0x00..=0x7f => 1,
                        0xc0..=0xdf => 2,
                        0xe0..=0xef => 3,
                        _ => 4,
                    };
                    let text = std::str::from_utf8(&self.bytes[self.at..self.at + length]).expect("UTF-8");
                    units.extend(text.encode_utf16());
                    self.at += length;
                }
            }
        }
    }
}
