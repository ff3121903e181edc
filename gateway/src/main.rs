//! The `mcp-gateway` command: run, validate a config, print the config schema or a capture
//! file, or run the demo.

use clap::{Parser, Subcommand};
use mcp_gateway::{config, demo, logging, server};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc: pingora allocates per request (headers, tasks, buffers); on the benchmark box it
/// raised bare pingora's and the gateway's req/s by 10-15% over glibc malloc (scripts/bench).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(feature = "mimalloc")]
/// How often the allocator is asked to give back memory freed since (see [`give_back_freed`]).
const COLLECT_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// mimalloc gives freed pages back to the OS after a delay, but only when something calls into
/// it later: after a burst (4,000 half-open connections closing at once, issue 26) an idle
/// gateway kept what they had used. A thread of its own asks it every [`COLLECT_EVERY`] to run
/// the purges that are due (`mi_collect(false)`: no forced work on the request threads);
/// measured in docs/benchmarks.md, "Half-open connections".
#[cfg(feature = "mimalloc")]
fn give_back_freed() {
    let spawned = std::thread::Builder::new()
        .name("mimalloc-collect".into())
        .spawn(|| loop {
            std::thread::sleep(COLLECT_EVERY);
            #[expect(
                unsafe_code,
                reason = "mimalloc has no safe wrapper for mi_collect; see SAFETY below"
            )]
            // SAFETY: mi_collect (declared by `libmimalloc-sys`, the library the allocator is)
            // takes no arguments but a flag and only walks mimalloc's own state, which it
            // locks itself; it is safe to call from any thread at any time.
            unsafe {
                libmimalloc_sys::mi_collect(false)
            };
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "the allocator's collect thread did not start");
    }
}

/// The system's malloc gives back by itself.
#[cfg(not(feature = "mimalloc"))]
fn give_back_freed() {}

/// A session-terminating gateway for MCP (Streamable HTTP).
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Config file to run with.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Log one JSON object per line.
    #[arg(long)]
    log_json: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Check a config file and list every problem (exit 1), or say OK (exit 0).
    Validate {
        /// The config file.
        file: PathBuf,
    },
    /// Print the JSON Schema of the config file (shipped as docs/config.schema.json).
    Schema,
    /// Print request capture files (routes[].capture) readably.
    Capture {
        /// Capture files, printed in the order given (FILE.2 FILE.1 FILE: oldest first).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run the gateway in front of demo MCP servers of both eras on 127.0.0.1, with a
    /// scripted failover.
    Demo {
        /// Gateway port; demo servers take the next six, admin port+10.
        #[arg(long, default_value_t = 8080)]
        port: u16,
    },
    /// One legacy demo pod (started by `demo`).
    #[command(hide = true)]
    DemoPod {
        /// Port on 127.0.0.1.
        #[arg(long)]
        port: u16,
        /// Name it answers with.
        #[arg(long)]
        name: String,
    },
}

/// The backend credentials of `config` that cannot be read (never their values).
fn secrets(config: &config::Config) -> Vec<String> {
    server::unreadable_secrets(config)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Validate { file }) => match config::load(&file)
            .map(|c| (secrets(&c), config::notices(&c)))
        {
            Ok((unreadable, notices)) => {
                println!("{}: OK", file.display());
                // valid, but meaning something a config written before issue 48 did not
                for n in notices {
                    eprintln!("  warning: {n}");
                }
                // secrets often exist only where the gateway runs (a mounted Secret): said,
                // not failed (the gateway itself does not start without them)
                for e in unreadable {
                    eprintln!("  warning: {e} (the gateway will not start until it can be read)");
                }
                ExitCode::SUCCESS
            }
            Err(errors) => {
                eprintln!("{}: {} problem(s)", file.display(), errors.len());
                for e in errors {
                    eprintln!("  {e}");
                }
                ExitCode::FAILURE
            }
        },
        Some(Command::Schema) => {
            print!("{}", config::schema::schema_text());
            ExitCode::SUCCESS
        }
        Some(Command::Capture { files }) => print_captures(&files),
        Some(Command::Demo { port }) => {
            // the demo's story is told on the terminal: its log goes to a file
            let log = demo::log_path();
            match std::fs::File::create(&log) {
                Ok(file) => logging::init_to_file(cli.log_json, file),
                Err(e) => eprintln!("demo: no log file at {}: {e}", log.display()),
            }
            demo::run(port)
        }
        Some(Command::DemoPod { port, name }) => demo::run_pod(port, &name),
        None => {
            let Some(path) = cli.config else {
                eprintln!("usage: mcp-gateway --config FILE | validate FILE | demo (see --help)");
                return ExitCode::FAILURE;
            };
            logging::init(cli.log_json);
            match config::load(&path) {
                Ok(config) if !secrets(&config).is_empty() => {
                    let unreadable = secrets(&config);
                    eprintln!("{}: {} problem(s)", path.display(), unreadable.len());
                    for e in unreadable {
                        eprintln!("  {e}");
                    }
                    ExitCode::FAILURE
                }
                Ok(config) => {
                    tracing::info!(listen = %config.listen, "mcp-gateway starting");
                    give_back_freed();
                    server::build(config, Some(path)).run_forever()
                }
                Err(errors) => {
                    eprintln!("{}: {} problem(s)", path.display(), errors.len());
                    for e in errors {
                        eprintln!("  {e}");
                    }
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn print_captures(files: &[PathBuf]) -> ExitCode {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for file in files {
        let printed = std::fs::File::open(file)
            .and_then(|f| mcp_gateway::capture::print_file(std::io::BufReader::new(f), &mut out));
        if let Err(e) = printed {
            eprintln!("{}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
