//! No valid request ever gets a 500 from the default plugin: any Unicode question of 1–500
//! characters (not blank), any limit 1–20, answered by the real plugin over the real corpus.

use proptest::prelude::*;
use serde_json::json;
use turnstile_host::{Plugin, PluginSource};

use crate::support::TestApp;

/// The cases the edge once answered with 500: one 500-character "word" of Japanese, and of é.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_single_word_questions_are_answered() {
    let app = TestApp::load(&[]).await;
    for question in ["文字列を分割する方法".repeat(50), "é".repeat(500)] {
        let (status, body) = app
            .retrieve(json!({"question": question, "limit": 20}))
            .await;
        assert_eq!(status, 200, "{body}");
    }
    app.stop().await;
}

fn valid_question() -> impl Strategy<Value = String> {
    // Any chars (control characters, astral planes, combining marks), weighted toward the
    // separators and letters that make terms.
    let char = prop_oneof![
        4 => any::<char>(),
        2 => proptest::char::range('a', 'z'),
        1 => Just(' '),
        1 => proptest::char::range('\u{3040}', '\u{30ff}'),
        1 => Just('*'),
        1 => Just('"'),
    ];
    proptest::collection::vec(char, 1..=500)
        .prop_map(|chars| chars.into_iter().collect::<String>())
        .prop_filter("not blank", |q| !q.trim().is_empty())
}

#[test]
fn any_valid_question_gets_an_answer() {
    let state = turnstile_server::serve::load(&crate::support::args(&[])).unwrap();
    let plugin: std::sync::Arc<Plugin> = state.plugin();
    assert_eq!(state.plugins.current().source, PluginSource::Embedded);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 192,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&(valid_question(), 1u32..=20), |(question, limit)| {
            let answer = plugin.retrieve(&question, limit, 0);
            prop_assert!(answer.is_ok(), "{question:?} (limit {limit}): {answer:?}");
            prop_assert!(answer.unwrap().len() <= limit as usize);
            Ok(())
        })
        .unwrap();
}
