//! What deploys sdnlab beyond one machine, checked as a cluster would take
//! it: the Kubernetes manifests (deploy/kubernetes) render with `kubectl
//! kustomize`, validate offline against the Kubernetes schemas of the
//! oldest and newest releases kubernetes-validate ships, and fit together
//! (the Service finds the DaemonSet's pods, the inventory names the
//! Service, the Job mounts what its arguments read, the experiment is one
//! sdnlab runs); and the container image (deploy/container/build.sh)
//! builds offline FROM scratch with buildah, holds the binary alone, and
//! the binary runs in it and resolves names without the C library's
//! modules.

mod common;
use common::free_port;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sdnlab");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// kubernetes-validate's venv (scripts/install-kubevalidate.sh).
fn validator_bin() -> PathBuf {
    PathBuf::from(run(Command::new("bash").arg(root().join("scripts/install-kubevalidate.sh"))).trim())
}

fn render() -> String {
    run(Command::new("kubectl").args(["kustomize", root().join("deploy/kubernetes").to_str().unwrap()]))
}

/// The rendered documents as JSON (through the validator's own PyYAML).
fn documents(yaml: &str, bin: &Path) -> Vec<Value> {
    use std::io::Write;
    let mut child = Command::new(bin.join("python"))
        .args([
            "-c",
            "import sys, yaml, json; print(json.dumps(list(yaml.safe_load_all(sys.stdin))))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(yaml.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

fn validate(yaml: &str, bin: &Path, version: &str) -> std::process::Output {
    let file = std::env::temp_dir().join(format!("sdnlab-k8s-{}-{version}.yaml", std::process::id()));
    std::fs::write(&file, yaml).unwrap();
    let out = Command::new(bin.join("kubernetes-validate"))
        .args(["--strict", "--quiet", "-k", version, file.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    out
}

fn kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} rendered"))
}

#[test]
fn the_manifests_render_validate_and_fit_together() {
    let bin = validator_bin();
    let yaml = render();
    for version in ["1.25.0", "1.37.0"] {
        let out = validate(&yaml, &bin, version);
        assert!(
            out.status.success(),
            "Kubernetes {version}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The validator is live: a misspelt field fails it.
    let broken = yaml.replacen("hostNetwork: true", "hostNetwrk: true", 1);
    assert_ne!(broken, yaml);
    assert!(!validate(&broken, &bin, "1.37.0").status.success());

    let docs = documents(&yaml, &bin);
    let ns = kind(&docs, "Namespace")["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let ds = kind(&docs, "DaemonSet");
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(
        pod["hostNetwork"], true,
        "workers make tunnels on the node's own network"
    );
    let worker = &pod["containers"][0];
    assert_eq!(worker["securityContext"]["privileged"], true);
    let args: Vec<&str> = worker["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "worker");
    let listen = args[args.iter().position(|a| *a == "--listen").unwrap() + 1];
    let port: u16 = listen.rsplit_once(':').unwrap().1.parse().unwrap();
    let creds = args[args.iter().position(|a| *a == "--credentials").unwrap() + 1];
    let mounts = worker["volumeMounts"].as_array().unwrap();
    assert!(mounts.iter().any(|m| m["mountPath"] == creds), "{mounts:?}");
    let netns = mounts.iter().find(|m| m["mountPath"] == "/run/netns").unwrap();
    assert_eq!(netns["mountPropagation"], "Bidirectional");
    // The headless Service selects the workers' pods.
    let svc = kind(&docs, "Service");
    assert_eq!(svc["spec"]["clusterIP"], "None");
    let labels = &ds["spec"]["template"]["metadata"]["labels"];
    for (k, v) in svc["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&labels[k], v, "the Service selects {k}={v}, the pods have {labels}");
    }
    assert_eq!(svc["spec"]["ports"][0]["port"], port as u64);
    // The Job's arguments read what its volumes mount.
    let job = kind(&docs, "Job");
    let jpod = &job["spec"]["template"]["spec"];
    let coord = &jpod["containers"][0];
    let jargs: Vec<&str> = coord["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(jargs[0], "run");
    let cm = kind(&docs, "ConfigMap");
    let cm_name = cm["metadata"]["name"].as_str().unwrap();
    let exp_mount = coord["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| jargs[1].starts_with(m["mountPath"].as_str().unwrap()))
        .expect("the experiment's mount");
    let vol = jpod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == exp_mount["name"])
        .unwrap();
    assert_eq!(
        vol["configMap"]["name"], cm_name,
        "the Job mounts the generated ConfigMap"
    );
    let file_of = |arg: &str| arg.rsplit('/').next().unwrap().to_string();
    let experiment = cm["data"][file_of(jargs[1])].as_str().unwrap();
    let inventory = cm["data"][file_of(jargs[jargs.iter().position(|a| *a == "--workers").unwrap() + 1])]
        .as_str()
        .unwrap();
    // The inventory names the Service, in its namespace, on the workers' port.
    let svc_name = svc["metadata"]["name"].as_str().unwrap();
    assert!(
        inventory.contains(&format!("discover = \"{svc_name}.{ns}.svc.cluster.local:{port}\"")),
        "{inventory}"
    );
    // Its credentials are where the Job mounts the coordinator's.
    let cred_dir = inventory
        .lines()
        .find_map(|l| l.strip_prefix("credentials = \""))
        .unwrap()
        .trim_end_matches('"');
    assert!(coord["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["mountPath"] == cred_dir));
    // The experiment is one sdnlab accepts as written.
    let file = std::env::temp_dir().join(format!("sdnlab-k8s-exp-{}.toml", std::process::id()));
    std::fs::write(&file, experiment).unwrap();
    let printed = run(Command::new(BIN).args(["run", file.to_str().unwrap(), "--print-config"]));
    assert!(printed.contains("experiment = \"net\""), "{printed}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn the_image_is_the_binary_and_its_c_library_alone_and_runs() {
    let tag = format!("test{}", std::process::id());
    let image = run(Command::new("bash")
        .arg(root().join("deploy/container/build.sh"))
        .arg(&tag)
        .env("BUILDAH_STORAGE", "vfs"));
    let image = image.trim().to_string();
    assert_eq!(image, format!("localhost/sdnlab:{tag}"));
    let buildah = |args: &[&str]| run(Command::new("buildah").args(["--storage-driver", "vfs"]).args(args));
    struct Cleanup(String, Option<String>);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            if let Some(c) = &self.1 {
                let _ = Command::new("buildah")
                    .args(["--storage-driver", "vfs", "rm", c])
                    .output();
            }
            let _ = Command::new("buildah")
                .args(["--storage-driver", "vfs", "rmi", &self.0])
                .output();
        }
    }
    let mut cleanup = Cleanup(image.clone(), None);
    let entry = buildah(&["inspect", "--format", "{{.OCIv1.Config.Entrypoint}}", &image]);
    assert_eq!(entry.trim(), "[/usr/bin/sdnlab]");
    let c = buildah(&["from", &image]).trim().to_string();
    cleanup.1 = Some(c.clone());
    // Nothing in it but the binary and the libraries it links (the
    // loader, libc, libm, libgcc_s), at their paths on this machine.
    let mnt = PathBuf::from(buildah(&["mount", &c]).trim());
    let mut files = Vec::new();
    let mut stack = vec![mnt.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p.strip_prefix(&mnt).unwrap().display().to_string());
            }
        }
    }
    files.sort();
    let libs: Vec<&String> = files.iter().filter(|f| *f != "usr/bin/sdnlab").collect();
    assert!(files.contains(&"usr/bin/sdnlab".to_string()), "no binary: {files:?}");
    assert!(
        libs.iter().any(|f| f.ends_with("/libc.so.6")) && libs.iter().any(|f| f.contains("ld-linux")),
        "the C library is not in the image: {files:?}"
    );
    assert!(
        libs.iter().all(|f| f.contains(".so")),
        "the image holds more than the binary and its libraries: {files:?}"
    );
    buildah(&["umount", &c]);
    let o = Command::new("buildah")
        .args(["--storage-driver", "vfs", "run", "--isolation", "chroot", &c, "--"])
        .args(["/usr/bin/sdnlab", "--version"])
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&o.stdout);
    // (Seen once in CI: success and nothing on stdout; what else it said, if so.)
    assert!(
        o.status.success() && version.starts_with("sdnlab "),
        "{}: stdout {version:?}, stderr {:?}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    // A name resolves inside (hosts file, no NSS modules): the coordinator
    // gets as far as the credentials, which are not there.
    let dir = std::env::temp_dir().join(format!("sdnlab-image-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("e.toml"), "experiment = \"net\"\ntopology = \"linear,2\"\n").unwrap();
    std::fs::write(
        dir.join("i.toml"),
        "credentials = \"/nowhere\"\ndiscover = \"localhost:7799\"\n",
    )
    .unwrap();
    buildah(&[
        "copy",
        &c,
        dir.join("e.toml").to_str().unwrap(),
        dir.join("i.toml").to_str().unwrap(),
        "/x/",
    ]);
    let out = Command::new("buildah")
        .args(["--storage-driver", "vfs", "run", "--isolation", "chroot", &c, "--"])
        .args("/usr/bin/sdnlab run /x/e.toml --workers /x/i.toml --no-live --out /tmp/r".split_whitespace())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success());
    assert!(
        text.contains("over 1 worker(s)"),
        "localhost did not resolve in the image: {text}"
    );
    assert!(text.contains("/nowhere/"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// etcd (Debian's) and a real kube-apiserver (scripts/install-kube-apiserver.sh)
/// on loopback ports of their own, as kubeadm runs it (privileged pods
/// allowed); both stopped and their files removed on drop.
struct ApiServer {
    dir: PathBuf,
    etcd: std::process::Child,
    api: std::process::Child,
    port: u16,
}

const TOKEN: &str = "sdnlab-deploy-test";

impl ApiServer {
    fn start() -> ApiServer {
        let bin = PathBuf::from(run(Command::new("bash").arg(root().join("scripts/install-kube-apiserver.sh"))).trim());
        let dir = std::env::temp_dir().join(format!("sdnlab-kube-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (client, peer, port) = (free_port(), free_port(), free_port());
        let log = |name: &str| std::fs::File::create(dir.join(name)).unwrap();
        let etcd = Command::new("etcd")
            .args(["--data-dir", dir.join("etcd").to_str().unwrap()])
            .args(["--listen-client-urls", &format!("http://127.0.0.1:{client}")])
            .args(["--advertise-client-urls", &format!("http://127.0.0.1:{client}")])
            .args(["--listen-peer-urls", &format!("http://127.0.0.1:{peer}")])
            .stdout(log("etcd.log"))
            .stderr(log("etcd.err"))
            .spawn()
            .expect("etcd (scripts/install-deps.sh installs etcd-server)");
        run(Command::new("openssl").args(["genrsa", "-out", dir.join("sa.key").to_str().unwrap(), "2048"]));
        run(Command::new("openssl").args([
            "rsa",
            "-in",
            dir.join("sa.key").to_str().unwrap(),
            "-pubout",
            "-out",
            dir.join("sa.pub").to_str().unwrap(),
        ]));
        std::fs::write(dir.join("tokens.csv"), format!("{TOKEN},admin,admin,system:masters\n")).unwrap();
        let api = Command::new(bin)
            .args(["--etcd-servers", &format!("http://127.0.0.1:{client}")])
            .args(["--bind-address", "127.0.0.1", "--secure-port", &port.to_string()])
            .args(["--cert-dir", dir.join("certs").to_str().unwrap()])
            .args(["--token-auth-file", dir.join("tokens.csv").to_str().unwrap()])
            .args(["--service-account-issuer", "https://kubernetes.default.svc"])
            .args(["--service-account-key-file", dir.join("sa.pub").to_str().unwrap()])
            .args([
                "--service-account-signing-key-file",
                dir.join("sa.key").to_str().unwrap(),
            ])
            .args(["--service-cluster-ip-range", "10.96.0.0/16", "--allow-privileged=true"])
            .stdout(log("apiserver.log"))
            .stderr(log("apiserver.err"))
            .spawn()
            .unwrap();
        let s = ApiServer { dir, etcd, api, port };
        let start = std::time::Instant::now();
        loop {
            let out = s.kubectl().args(["get", "--raw", "/readyz"]).output().unwrap();
            if out.status.success() {
                break;
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(120),
                "the API server did not become ready: {}",
                std::fs::read_to_string(s.dir.join("apiserver.err")).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        s
    }

    fn kubectl(&self) -> Command {
        let mut c = Command::new("kubectl");
        c.args([
            "--server",
            &format!("https://127.0.0.1:{}", self.port),
            "--token",
            TOKEN,
        ])
        .arg("--insecure-skip-tls-verify");
        c
    }

    fn get(&self, what: &str) -> Value {
        serde_json::from_str(&run(self.kubectl().args(["-n", "sdnlab", "get", what, "-o", "json"]))).unwrap()
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        let _ = self.api.kill();
        let _ = self.api.wait();
        let _ = self.etcd.kill();
        let _ = self.etcd.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn the_manifests_deploy_to_a_real_api_server() {
    let api = ApiServer::start();
    let manifests = root().join("deploy/kubernetes");
    run(api
        .kubectl()
        .args(["apply", "-f", manifests.join("namespace.yaml").to_str().unwrap()]));
    let creds = api.dir.join("creds");
    run(Command::new(BIN).args(["credentials", creds.to_str().unwrap()]));
    run(api
        .kubectl()
        .args(["-n", "sdnlab", "create", "secret", "generic", "sdnlab-credentials"])
        .arg(format!("--from-file={}", creds.display())));
    // Every field is checked against the server's own schema, and the
    // server admits each object.
    let applied = run(api
        .kubectl()
        .args(["apply", "--validate=true", "-k", manifests.to_str().unwrap()]));
    for what in [
        "daemonset.apps/sdnlab-worker",
        "service/sdnlab-workers",
        "job.batch/sdnlab-run",
        "persistentvolumeclaim/sdnlab-results",
    ] {
        assert!(applied.contains(what), "{what} not applied: {applied}");
    }
    let ds = api.get("daemonset/sdnlab-worker");
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(pod["hostNetwork"], true);
    assert_eq!(pod["containers"][0]["securityContext"]["privileged"], true);
    assert_eq!(pod["dnsPolicy"], "ClusterFirstWithHostNet");
    let svc = api.get("service/sdnlab-workers");
    assert_eq!(svc["spec"]["clusterIP"], "None");
    let job = api.get("job/sdnlab-run");
    assert_eq!(job["spec"]["backoffLimit"], 0);
    let secret = api.get("secret/sdnlab-credentials");
    for key in [
        "ca.pem",
        "worker.pem",
        "worker-key.pem",
        "coordinator.pem",
        "coordinator-key.pem",
    ] {
        assert!(secret["data"][key].is_string(), "the Secret lacks {key}");
    }
    // Applying again changes nothing (the manifests are declarative).
    let again = run(api.kubectl().args(["apply", "-k", manifests.to_str().unwrap()]));
    assert!(!again.contains("created"), "{again}");
    // The check is live: a misspelt field is refused.
    let broken = render().replacen("hostNetwork: true", "hostNetwrk: true", 1);
    let file = api.dir.join("broken.yaml");
    std::fs::write(&file, broken).unwrap();
    let out = api
        .kubectl()
        .args([
            "apply",
            "--validate=true",
            "--dry-run=server",
            "-f",
            file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("hostNetwrk"), "{out:?}");
}
