//! What a replica serves: the nginx configuration that runs it privately
//! (its own prefix, pid file, logs and document root, so nothing of the
//! machine's nginx is touched) and the files of the paper's two loads.

use std::path::Path;

/// The homogeneous load's file: every request fetches 100 KB.
pub const HOMOGENEOUS_FILE: &str = "file100k.bin";
pub const HOMOGENEOUS_BYTES: usize = 100 * 1024;

/// nginx running in the foreground under `dir`, serving `dir/www` on
/// `port`, naming itself in an `X-Replica` header on every response.
pub fn nginx_config(dir: &Path, name: &str, port: u16) -> String {
    let d = dir.display();
    format!(
        "daemon off;
master_process on;
worker_processes 1;
user root;
pid {d}/nginx.pid;
error_log {d}/nginx-error.log;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    keepalive_requests 100000;
    client_body_temp_path {d}/tmp-body;
    proxy_temp_path {d}/tmp-proxy;
    fastcgi_temp_path {d}/tmp-fastcgi;
    uwsgi_temp_path {d}/tmp-uwsgi;
    scgi_temp_path {d}/tmp-scgi;
    default_type application/octet-stream;
    server {{
        listen {port} backlog=4096;
        root {d}/www;
        location / {{ add_header X-Replica {name} always; }}
    }}
}}
"
    )
}

/// Writes the configuration and the files every load asks for; returns the
/// nginx command line (run it inside the replica's namespace).
pub fn prepare(dir: &Path, name: &str, port: u16, chunks: &[usize]) -> std::io::Result<Vec<String>> {
    std::fs::create_dir_all(dir.join("www"))?;
    std::fs::write(dir.join("nginx.conf"), nginx_config(dir, name, port))?;
    std::fs::write(dir.join("www/index.html"), format!("{name}\n"))?;
    std::fs::write(dir.join("www").join(HOMOGENEOUS_FILE), vec![b'x'; HOMOGENEOUS_BYTES])?;
    for (i, &len) in chunks.iter().enumerate() {
        std::fs::write(dir.join("www").join(chunk_name(i)), vec![b'v'; len])?;
    }
    Ok(vec![
        "nginx".into(),
        "-p".into(),
        format!("{}/", dir.display()),
        "-c".into(),
        dir.join("nginx.conf").display().to_string(),
        "-e".into(),
        dir.join("nginx-error.log").display().to_string(),
    ])
}

/// The URI of the homogeneous load's file.
pub fn homogeneous_uri() -> String {
    format!("/{HOMOGENEOUS_FILE}")
}

pub fn chunk_name(i: usize) -> String {
    format!("chunk{i:03}.bin")
}

/// An nginx started by `start_in`; dropping it stops it (SIGTERM, so the
/// master takes its workers with it; SIGKILL after nsexec's grace).
pub struct Server {
    _nginx: nsexec::Children,
}

/// Starts nginx serving the homogeneous load's file (and `index.html`) on
/// `port` in network namespace `netns`, its files under
/// `run_dir/http-NAME`; returns once it accepts connections (at most 10 s).
pub fn start_in(netns: &str, run_dir: &Path, name: &str, port: u16) -> Result<Server, crate::LbError> {
    use crate::LbError;
    let dir = &run_dir.join(format!("http-{name}"));
    let argv = prepare(dir, name, port, &[]).map_err(LbError::io(dir.display().to_string()))?;
    let mut child = nsexec::command(netns, &argv[0])
        .map_err(LbError::io("nginx"))?
        .args(&argv[1..])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(LbError::io("nginx (install it: scripts/install-deps.sh)"))?;
    let listening = nsexec::on_thread(Some(netns), move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        while std::time::Instant::now() < deadline {
            if std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200)).is_ok() {
                return Ok(true);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Ok(false)
    })
    .map_err(LbError::io("nginx"))?;
    if !listening {
        let _ = child.kill();
        let _ = child.wait();
        let log = std::fs::read_to_string(dir.join("nginx-error.log")).unwrap_or_default();
        return Err(LbError::NotListening {
            port,
            last_line: log.lines().last().unwrap_or("(nothing in its error log)").to_string(),
        });
    }
    Ok(Server {
        _nginx: nsexec::Children(vec![child]),
    })
}
