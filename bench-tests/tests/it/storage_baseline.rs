//! The storage baseline's parser on real fio output: `fixtures/fio/fio-3.33.json` is what
//! fio 3.33 printed for `fixtures/fio/job.fio`, the Job's own job file with a small file
//! and short runs. The parsed values are the report's own numbers; anything that is not
//! a whole fio report is one error line. No engine and no cluster are needed.

use chbench::files::workspace_root;
use chbench::storage_baseline::{Device, JOB_FILE_VARIANT, fio_job_file, parse_fio_output};
use serde_json::Value;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(workspace_root().join("fixtures/fio").join(name)).unwrap()
}

fn device() -> Device {
    Device { variant: "kind".into(), description: "a test file".into(), node: "here".into(), instance_type: None }
}

fn error(output: &str) -> String {
    format!("{:#}", parse_fio_output(output, device()).unwrap_err())
}

#[test]
fn real_fio_output_parses_to_its_own_numbers() {
    let output = fixture("fio-3.33.json");
    let report: Value = serde_json::from_str(&output).unwrap();
    let job = |name: &str| report["jobs"].as_array().unwrap().iter().find(|job| job["jobname"] == name).unwrap();
    let (seq, rand) = (&job("seq_read")["read"], &job("rand_read")["read"]);
    let baseline = parse_fio_output(&output, device()).unwrap();
    assert_eq!(baseline.tool, report["fio version"].as_str().unwrap());
    assert_eq!(baseline.measured_at.as_second(), report["timestamp"].as_i64().unwrap());
    assert_eq!(baseline.device, device());
    assert!(baseline.direct);
    assert_eq!(baseline.file_size_bytes, 64 << 20);
    assert_eq!(baseline.seq_read.block_size_bytes, 1 << 20);
    assert_eq!(baseline.seq_read.iodepth, 16);
    assert_eq!(baseline.seq_read.runtime_ms, seq["runtime"].as_u64().unwrap());
    assert_eq!(baseline.seq_read.bytes, seq["io_bytes"].as_u64().unwrap());
    assert_eq!(baseline.seq_read.mib_per_s, Some(seq["bw_bytes"].as_f64().unwrap() / 1048576.0));
    assert_eq!(baseline.rand_read.block_size_bytes, 4096);
    assert_eq!(baseline.rand_read.iodepth, 64);
    assert_eq!(baseline.rand_read.runtime_ms, rand["runtime"].as_u64().unwrap());
    assert_eq!(baseline.rand_read.ios, rand["total_ios"].as_u64().unwrap());
    assert_eq!(baseline.rand_read.iops, Some(rand["iops"].as_f64().unwrap()));
    let clat = &rand["clat_ns"];
    assert_eq!(baseline.rand_read.latency_us.mean, Some(clat["mean"].as_f64().unwrap() / 1e3));
    assert_eq!(baseline.rand_read.latency_us.p50, Some(clat["percentile"]["50.000000"].as_f64().unwrap() / 1e3));
    assert_eq!(baseline.rand_read.latency_us.p99, Some(clat["percentile"]["99.000000"].as_f64().unwrap() / 1e3));
    // A pod's log holds fio's stderr too, before its report.
    let logged = format!("fio: note: a warning on stderr\n{output}");
    assert_eq!(parse_fio_output(&logged, device()).unwrap(), baseline);
}

/// The fixture was made with the Job's job file: the same lines but the file size and
/// the run times. The three variants run one job file.
#[test]
fn the_fixture_ran_the_jobs_job_file() {
    let job_file = |variant: &str| {
        fio_job_file(variant)
            .unwrap()
            .lines()
            .map(|line| line.trim_start().to_string())
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
    };
    let jobs = job_file(JOB_FILE_VARIANT);
    assert_eq!(job_file("eks-nvme"), jobs);
    assert_eq!(job_file("kind"), jobs);
    let shortened = ["size=", "ramp_time=", "runtime="];
    let kept = |lines: Vec<String>| -> Vec<String> {
        lines.into_iter().filter(|line| !shortened.iter().any(|option| line.starts_with(option))).collect()
    };
    let fixture: Vec<String> = fixture("job.fio")
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with(';'))
        .map(str::to_string)
        .collect();
    assert_eq!(kept(fixture), kept(jobs.clone()));
    for option in ["direct=1", "size=2G", "ramp_time=2s", "runtime=15s", "bs=1M", "bs=4k", "iodepth=64"] {
        assert!(jobs.iter().any(|line| line == option), "the Job's job file lacks {option}");
    }
}

#[test]
fn anything_but_a_whole_fio_report_is_one_clear_error() {
    let output = fixture("fio-3.33.json");
    let cases = [
        ("", "not a usable fio report: no JSON report in the output, which begins \"(empty)\""),
        ("fio: failed to open job file\n", "not a usable fio report: no JSON report in the output, which begins"),
        (&output[..output.len() / 2], "not a usable fio report: the JSON report is cut short or damaged"),
        ("{\"jobs\": []}", "not a usable fio report: not a fio JSON report (missing field `fio version`"),
    ];
    for (text, expected) in cases {
        let message = error(text);
        assert!(message.starts_with(expected), "{message}");
        assert!(!message.contains('\n'), "{message}");
    }
    let buffered = output.replace("\"direct\" : \"1\"", "\"direct\" : \"0\"");
    assert_eq!(
        error(&buffered),
        "not a usable fio report: fio job seq_read did not run with direct=1: the page cache would have served its reads"
    );
    let renamed = output.replace("\"jobname\" : \"rand_read\"", "\"jobname\" : \"other\"");
    assert_eq!(error(&renamed), "not a usable fio report: it has no job rand_read (its jobs: seq_read, other)");
}
