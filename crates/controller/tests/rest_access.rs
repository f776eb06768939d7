//! The REST API's doors, knocked on with curl as a client would: writes
//! without the token (401), with a body that is not JSON (415), a foreign
//! Host (421), CORS only for the origins named, reads closed when asked,
//! and HTTPS with a certificate (curl checking it against its CA).

use controller::rest::Access;
use std::net::SocketAddr;
use std::process::Command;

const TOKEN: &str = "rest-access-test-token-0123456789";

fn api(access: Access) -> SocketAddr {
    let set = controller::catalog::build(&["l2-learning"]).unwrap();
    let ctl = controller::runtime::start(controller::runtime::Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        workers: 1,
        apps: set.factories.clone(),
        ..Default::default()
    })
    .unwrap();
    controller::rest::serve("127.0.0.1:0".parse().unwrap(), ctl, set, access).unwrap()
}

/// curl's status code and the response headers and body, for `args`.
fn curl(args: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "-i", "--max-time", "10"])
        .args(args)
        .output()
        .expect("curl (install-deps installs it)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "curl {args:?}: no HTTP answer: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    (status, text)
}

#[test]
fn writes_need_the_token_and_json_and_the_host_must_name_the_api() {
    let mut access = Access::with_token(TOKEN.into());
    access.hosts = vec!["ctl.lab".into()];
    access.cors = vec!["https://console.lab".into()];
    let a = api(access);
    let url = |p: &str| format!("http://{a}{p}");
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let body = r#"{"src": "02:00:00:00:00:01", "dst": "02:00:00:00:00:02"}"#;

    // Reads are open.
    assert_eq!(curl(&[&url("/stats")]).0, 200);
    // A write without the token, or with a wrong one.
    let (st, text) = curl(&[
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "-d",
        body,
        &url("/paths"),
    ]);
    assert_eq!(st, 401, "{text}");
    assert!(text.to_ascii_lowercase().contains("www-authenticate: bearer"), "{text}");
    let wrong = format!("Authorization: Bearer {}x", &TOKEN[..TOKEN.len() - 1]);
    assert_eq!(
        curl(&[
            "-X",
            "POST",
            "-H",
            &wrong,
            "-H",
            "Content-Type: application/json",
            "-d",
            body,
            &url("/paths")
        ])
        .0,
        401
    );
    assert_eq!(curl(&["-X", "DELETE", &url("/switches/1/flows")]).0, 401);
    // With the token but a form or plain text (what a web page can send
    // without asking): refused.
    for ct in ["text/plain", "application/x-www-form-urlencoded"] {
        let (st, text) = curl(&[
            "-X",
            "POST",
            "-H",
            &bearer,
            "-H",
            &format!("Content-Type: {ct}"),
            "-d",
            body,
            &url("/paths"),
        ]);
        assert_eq!(st, 415, "{ct}: {text}");
    }
    // With both: the handler answers (409: the paths app is not running here).
    let (st, text) = curl(&[
        "-X",
        "POST",
        "-H",
        &bearer,
        "-H",
        "Content-Type: application/json; charset=utf-8",
        "-d",
        body,
        &url("/paths"),
    ]);
    assert_eq!(st, 409, "{text}");
    // A DELETE without a body needs no Content-Type (404: no such switch).
    assert_eq!(curl(&["-X", "DELETE", "-H", &bearer, &url("/switches/1/flows")]).0, 404);

    // DNS rebinding: another name for this machine is refused; the names given are not.
    let (st, text) = curl(&["-H", "Host: evil.example:80", &url("/stats")]);
    assert_eq!(st, 421, "{text}");
    assert_eq!(
        curl(&["-H", &format!("Host: ctl.lab:{}", a.port()), &url("/stats")]).0,
        200
    );
    assert_eq!(
        curl(&["-H", &format!("Host: localhost:{}", a.port()), &url("/stats")]).0,
        200
    );

    // CORS: a preflight from an origin not named is refused; from one named, allowed.
    let preflight = |origin: &str| {
        curl(&[
            "-X",
            "OPTIONS",
            "-H",
            &format!("Origin: {origin}"),
            "-H",
            "Access-Control-Request-Method: POST",
            &url("/paths"),
        ])
    };
    assert_eq!(preflight("https://evil.example").0, 403);
    let (st, text) = preflight("https://console.lab");
    assert_eq!(st, 204, "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("access-control-allow-origin: https://console.lab"),
        "{text}"
    );
    let (_, text) = curl(&["-H", "Origin: https://evil.example", &url("/stats")]);
    assert!(
        !text.to_ascii_lowercase().contains("access-control-allow-origin"),
        "{text}"
    );
}

#[test]
fn reads_can_be_closed_and_the_api_served_over_https() {
    // Reads closed.
    let mut access = Access::with_token(TOKEN.into());
    access.open_reads = false;
    let a = api(access);
    assert_eq!(curl(&[&format!("http://{a}/stats")]).0, 401);
    let bearer = format!("Authorization: Bearer {TOKEN}");
    assert_eq!(curl(&["-H", &bearer, &format!("http://{a}/stats")]).0, 200);

    // HTTPS: a certificate for 127.0.0.1 signed by a CA curl is told of.
    let (a, dir) = https_api("tls");
    let ca_file = dir.join("ca.pem");
    let (st, text) = curl(&["--cacert", ca_file.to_str().unwrap(), &format!("https://{a}/stats")]);
    assert_eq!(st, 200, "{text}");
    assert!(text.contains("sessions"), "the API's answer over HTTPS: {text}");
    // Plain HTTP to it gets no HTTP answer.
    let out = Command::new("curl")
        .args([
            "-s",
            "--max-time",
            "5",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("http://{a}/stats"),
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "000");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn idle_connections_do_not_hold_an_https_request_back() {
    let (a, dir) = https_api("idle");
    // Three clients that connect and never start their handshake.
    let idle: Vec<std::net::TcpStream> = (0..3).map(|_| std::net::TcpStream::connect(a).unwrap()).collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let t = std::time::Instant::now();
    let ca_file = dir.join("ca.pem");
    let (st, text) = curl(&["--cacert", ca_file.to_str().unwrap(), &format!("https://{a}/stats")]);
    assert_eq!(st, 200, "{text}");
    // Each idle handshake waits out its 10 s deadline: one at a time, the
    // request would wait 30 s.
    assert!(
        t.elapsed() < std::time::Duration::from_secs(3),
        "the request waited {:?} behind idle connections",
        t.elapsed()
    );
    drop(idle);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The API over HTTPS with a certificate for 127.0.0.1 signed by a CA of
/// its own (`DIR/ca.pem`); its address and DIR.
fn https_api(test: &str) -> (SocketAddr, std::path::PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let dir = std::env::temp_dir().join(format!("sdnlab-rest-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "sdnlab REST test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("rest.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("rest-key.pem"), key.serialize_pem()).unwrap();
    let mut access = Access::with_token(TOKEN.into());
    access.tls = Some(controller::tls::server_config(&dir.join("rest.pem"), &dir.join("rest-key.pem"), None).unwrap());
    (api(access), dir)
}
