use super::*;

fn refused(body: &str) -> Refused {
    scan(body.as_bytes()).expect_err(body)
}

#[test]
fn the_fields_are_borrowed_from_the_body_when_they_have_no_escapes() {
    let body = r#" {"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo","arguments":{"x":[1,2.5e-3,{}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}} "#;
    let env = scan(body.as_bytes()).unwrap();
    assert_eq!(env.id, Some(r#""a-1""#));
    assert!(matches!(env.method, Some(Cow::Borrowed("tools/call"))));
    assert!(matches!(env.name, Some(Cow::Borrowed("echo"))));
    assert!(env.has_meta);
    assert_eq!(env.protocol_version.as_deref(), Some("2026-07-28"));
}

#[test]
fn escaped_keys_and_values_are_read_as_a_parser_reads_them() {
    let env = scan(
        br#"{"i\u0064":7,"m\u0065thod":"tools\/call","params":{"name":"\u00e9\ud83d\ude00"}}"#,
    )
    .unwrap();
    assert_eq!(env.id, Some("7"));
    assert_eq!(env.method.as_deref(), Some("tools/call"));
    assert_eq!(env.name.as_deref(), Some("é😀"));
}

#[test]
fn a_field_the_gateway_reads_given_twice_is_refused_and_others_may_repeat() {
    for body in [
        r#"{"id":1,"id":2}"#,
        r#"{"id":1,"i\u0064":1}"#,
        r#"{"params":{"name":"a","name":"b"}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}}}"#,
    ] {
        assert!(
            matches!(refused(body), Refused::Shape(m) if m.contains("given twice")),
            "{body}"
        );
    }
    assert!(
        scan(br#"{"jsonrpc":"2.0","jsonrpc":"2.0","params":{"arguments":1,"arguments":2}}"#)
            .is_ok()
    );
}

#[test]
fn wrong_types_name_the_field_and_where_never_the_value() {
    let Refused::Shape(m) = refused("{\"id\":1,\n \"params\":\"sk-secret\"}") else {
        panic!()
    };
    assert_eq!(m, "params must be an object (at line 2 column 11)");
    let Refused::Shape(m) = refused(r#"{"method":["sk-secret"]}"#) else {
        panic!()
    };
    assert!(
        m.starts_with("method must be a string or null") && !m.contains("secret"),
        "{m}"
    );
    assert!(scan(br#"{"method":null,"params":null,"id":null}"#).is_ok());
}

#[test]
fn syntax_errors_say_what_and_where() {
    for (body, want) in [
        ("", "EOF while parsing a value at line 1 column 1"),
        ("{\"id\":1,}", "key must be a string at line 1 column 9"),
        ("{\"id\" 1}", "expected `:` at line 1 column 7"),
        ("{\"id\":01}", "expected `,` or `}` at line 1 column 8"),
        ("{\"id\":1.}", "invalid number at line 1 column 9"),
        ("{\"id\":tru}", "expected ident at line 1 column 10"),
        ("{} x", "trailing characters at line 1 column 4"),
        (
            "{\"a\":\"\u{1}\"}",
            "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 7",
        ),
        ("{\"a\":\"\\x\"}", "invalid escape at line 1 column 8"),
        (
            "{\"a\":\"\\ud800\"}",
            "a \\u escape that is a lone UTF-16 surrogate",
        ),
        (
            "{\"a\":\"\\ud800\\n\"}",
            "a \\u escape that is a lone UTF-16 surrogate",
        ),
        (
            "{\"a\":\"\\udc00\"}",
            "a \\u escape that is a lone UTF-16 surrogate",
        ),
        (
            "{\"a\":\"x",
            "EOF while parsing a string at line 1 column 8",
        ),
    ] {
        assert_eq!(refused(body), Refused::Syntax(want.into()), "{body:?}");
    }
    assert!(
        matches!(scan(b"{\"a\":\"\xff\"}"), Err(Refused::Syntax(m)) if m == "invalid UTF-8 at line 1 column 7")
    );
}

#[test]
fn any_number_the_grammar_allows_is_accepted_however_large() {
    for n in [
        "0",
        "-0",
        "1e400",
        "-1.5E-400",
        "123456789012345678901234567890",
        "0.0e+0",
    ] {
        assert!(scan(format!("{{\"id\":{n}}}").as_bytes()).is_ok(), "{n}");
    }
    for n in ["01", "1.", ".5", "+1", "1e", "-", "1e+", "NaN", "Infinity"] {
        assert!(
            matches!(refused(&format!("{{\"id\":{n}}}")), Refused::Syntax(_)),
            "{n}"
        );
    }
}

#[test]
fn batches_and_non_objects_are_told_apart_from_broken_json() {
    assert_eq!(refused(r#"[{"id":1}]"#), Refused::Array);
    assert!(matches!(refused("[1,"), Refused::Syntax(_)));
    assert_eq!(refused(r#""a string""#), Refused::NotObject);
    assert_eq!(refused("  null "), Refused::NotObject);
}

#[test]
fn nesting_stops_at_the_limit() {
    let ok = format!(
        "{{\"a\":{}{}}}",
        "[".repeat(MAX_DEPTH - 2),
        "]".repeat(MAX_DEPTH - 2)
    );
    assert!(scan(ok.as_bytes()).is_ok());
    let deep = format!(
        "{{\"a\":{}{}}}",
        "[".repeat(MAX_DEPTH - 1),
        "]".repeat(MAX_DEPTH - 1)
    );
    assert!(matches!(refused(&deep), Refused::Syntax(m) if m.contains("levels deep")));
}

#[test]
fn the_tasks_extension_is_seen_where_the_client_declares_it() {
    let meta = |caps: &str| {
        format!(
            r#"{{"id":1,"method":"tools/call","params":{{"name":"t","_meta":{{"io.modelcontextprotocol/clientCapabilities":{caps}}}}}}}"#
        )
    };
    for (caps, declared) in [
        (
            r#"{"extensions":{"io.modelcontextprotocol/tasks":{}}}"#,
            true,
        ),
        (
            r#"{"sampling":{},"extensions":{"x":1,"io.modelcontextprotocol/tasks":{"a":[1]}}}"#,
            true,
        ),
        (
            r#"{"extensions":{"io.modelcontextprotocol/t\u0061sks":{}}}"#,
            true,
        ),
        (r#"{}"#, false),
        (r#"{"extensions":{}}"#, false),
        (
            r#"{"extensions":{"io.modelcontextprotocol/other":{}}}"#,
            false,
        ),
        // the key elsewhere than under `extensions` is no declaration
        (r#"{"io.modelcontextprotocol/tasks":{}}"#, false),
        (
            r#"{"extensions":[{"io.modelcontextprotocol/tasks":{}}]}"#,
            false,
        ),
        (r#"null"#, false),
        (r#""tasks""#, false),
    ] {
        let body = meta(caps);
        let env = scan(body.as_bytes()).unwrap_or_else(|e| panic!("{body}: {e:?}"));
        assert_eq!(env.declares_tasks, declared, "{caps}");
    }
    // given twice (a parser keeps one of them): declared when either declares it
    let twice = r#"{"id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    assert!(scan(twice.as_bytes()).unwrap().declares_tasks);
    // outside `params._meta`: no declaration
    let elsewhere = r#"{"id":1,"method":"tools/call","params":{"arguments":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}"#;
    assert!(!scan(elsewhere.as_bytes()).unwrap().declares_tasks);
    // still checked: a broken value under the capabilities is refused
    assert!(scan(meta(r#"{"extensions":{"a":tru}}"#).as_bytes()).is_err());
}
