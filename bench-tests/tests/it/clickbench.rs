//! The shipped hits-like table (`fixtures/clickbench/`) on the real engine: the three
//! queries' answers are determined by the data, the same digest in 10 runs with
//! `max_threads` from 1 to 4, because their top 11 counts are all different (the
//! generator's planted groups), so `ORDER BY c DESC LIMIT 10` has no tie to resolve
//! either way; and the table has the skew the generator promises.

use chbench::answers::AnswerDigest;
use chbench::benchmarks::clickbench::SHIPPED_QUERIES;
use chbench::benchmarks::clickbench::dataset::shipped_dataset;
use chbench::fixtures::{Fixture, Params, Statement};
use chbench::settings::Settings;
use chbench::targets::Target;

/// Enough rows that the tail's groups are many, few enough to build in seconds.
const ROWS: u64 = 300_000;

fn open() -> Target {
    shipped_dataset(ROWS).open().unwrap_or_else(|error| panic!("cannot open the clickbench dataset: {error:#}")).0
}

fn query(name: &str) -> Statement {
    Fixture::load(format!("clickbench/queries/{name}.sql")).unwrap().render_one(&Params::new()).unwrap()
}

fn answer(target: &mut Target, sql: &str, max_threads: u32) -> String {
    let settings = Settings::new().with("max_threads", max_threads.to_string());
    target.run(sql, &settings, "TabSeparated").unwrap_or_else(|error| panic!("{error:#}")).body
}

#[test]
fn the_shipped_queries_give_one_answer_in_ten_runs_whatever_max_threads() {
    let mut target = open();
    for name in SHIPPED_QUERIES {
        let sql = query(name);
        let digests: Vec<AnswerDigest> =
            (0..10).map(|run| AnswerDigest::of_tab_separated(&answer(&mut target, &sql, run % 4 + 1))).collect();
        assert!(digests.iter().all(|digest| *digest == digests[0]), "{name}: {digests:?}");
        assert_eq!(digests[0].rows, 10, "{name}");
    }
}

#[test]
fn the_top_eleven_counts_of_each_query_are_all_different() {
    let mut target = open();
    // The count's column in each query's result.
    for (name, count_column) in SHIPPED_QUERIES.into_iter().zip([3, 2, 1]) {
        let sql = query(name).sql.replace("LIMIT 10", "LIMIT 11");
        let body = answer(&mut target, &sql, 2);
        let counts: Vec<u64> =
            body.lines().map(|line| line.split('\t').nth(count_column).unwrap().parse().unwrap()).collect();
        assert_eq!(counts.len(), 11, "{name}: {body}");
        assert!(counts.windows(2).all(|pair| pair[0] > pair[1]), "{name}: counts tie at or before the cut: {counts:?}");
    }
}

#[test]
fn the_table_is_skewed_as_web_traffic_is() {
    let mut target = open();
    let text = target
        .query_text(
            "SELECT countIf(SearchPhrase = '') / count(), (SELECT max(c) FROM (SELECT count() AS c FROM hits GROUP BY \
             URL)) / count(), uniqExact(UserID) / count() FROM hits",
        )
        .unwrap();
    let shares: Vec<f64> = text.trim().split('\t').map(|value| value.parse().unwrap()).collect();
    // Most phrases empty; one URL a tenth of the rows; most users seen about twice.
    assert!(shares[0] > 0.4, "{shares:?}");
    assert!(shares[1] > 0.1, "{shares:?}");
    assert!(shares[2] > 0.1, "{shares:?}");
}
