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

pub fn chunk_name(i: usize) -> String {
    format!("chunk{i:03}.bin")
}
