//! The write path's inline batch on the embedded engine (`WritesTable::inline_insert`):
//! one batch's rows made by the engine from the INSERT and sent inline write exactly those
//! rows, and the scratch table it was made in is gone. (Sent with asynchronous insert
//! settings it needs a server's queue, which no target here has; `bench writes
//! --async-insert` refuses the embedded engine, tested in xtask's writes tests.)

use chbench::benchmarks::writes::WritesTable;
use chbench::target_info::TargetKind;
use chbench::targets::open_target_of_kind;

#[test]
fn an_inline_batch_writes_the_rows_the_insert_makes() {
    let mut target = open_target_of_kind(TargetKind::Embedded).expect("cannot open the embedded engine");
    target.use_scenario_database("writes_inline_batch").unwrap();
    let table = WritesTable::load(None, 25).unwrap();
    for statement in &table.schema {
        target.execute(statement).unwrap();
    }
    let inline = table.inline_insert(&mut target).unwrap();
    assert!(inline.statement.sql.starts_with("INSERT INTO logs FORMAT Values ("), "{}", &inline.statement.sql[..80]);
    assert!(inline.sent_as.starts_with("INSERT INTO logs FORMAT Values with one batch's rows inline ("));
    // The scratch table is gone, and the logs table is still empty: the batch went nowhere.
    let tables = target.query_text("SELECT name FROM system.tables WHERE database = currentDatabase()").unwrap();
    assert_eq!(tables.trim(), "logs");
    target.execute(&inline.statement.sql).unwrap();
    target.execute(&inline.statement.sql).unwrap();
    let rows = target.query_text("SELECT count(), uniqExact(trace_id) FROM logs").unwrap();
    // Twice the same 25 rows: 50 rows, 25 distinct.
    assert_eq!(rows.trim(), "50\t25");
}
