//! A member's lease and its view of the cluster: the lease kept alive (or
//! the member joined again), and every key of the cluster's prefix read
//! back and kept current from etcd's watch.

use super::*;

impl Member {
    pub(super) async fn keep_alive(&mut self) -> Result<(), LeaseError> {
        let t = self.cfg.request_timeout;
        let ka = async {
            let (mut keeper, mut stream) = self.client.lease_keep_alive(self.lease).await?;
            keeper.keep_alive().await?;
            Ok::<_, etcd_client::Error>(stream.message().await?.map(|r| r.ttl()))
        };
        match tokio::time::timeout(t, ka).await {
            Err(_) => Err(LeaseError::TimedOut),
            Ok(Err(e)) if !lease_gone(&e) => Err(e.into()),
            Ok(Ok(Some(ttl))) if ttl > 0 => Ok(()),
            // etcd answers that the lease is gone (the keep-alive stream
            // says so with an error, or with a TTL of 0).
            Ok(_) => {
                // The lease is gone (revoked by a member that thought us
                // dead, or expired while etcd could not hear us): join
                // again with a new one.
                Ok(self.rejoin().await?)
            }
        }
    }

    pub(super) async fn rejoin(&mut self) -> Result<(), etcd_client::Error> {
        // Until the keys are read again, nothing says this member still
        // masters anything: the roles it told stand (the switches refuse
        // a stale master's writes by its old generation id).
        let ttl = self.cfg.lease_ttl.as_secs().max(1) as i64;
        self.lease = self.client.lease_grant(ttl, None).await?.id();
        let value = serde_json::json!({"lease": self.lease, "probe": self.probe.to_string()}).to_string();
        let opts = || Some(PutOptions::new().with_lease(self.lease));
        let me = format!("{}members/{}", self.prefix, self.cfg.member);
        self.client.put(me, value, opts()).await?;
        let local: Vec<u64> = self.local.keys().copied().collect();
        for d in local {
            let key = format!("{}switches/{}/{}", self.prefix, dpid_key(d), self.cfg.member);
            self.client.put(key, "", opts()).await?;
        }
        Ok(())
    }

    /// Reads every key of the cluster and starts a watch after them.
    pub(super) async fn resync(&mut self) -> Result<etcd_client::WatchStream, etcd_client::Error> {
        let t = self.cfg.request_timeout;
        let timed =
            |e: tokio::time::error::Elapsed| etcd_client::Error::InvalidArgs(format!("etcd did not answer: {e}"));
        let resp = tokio::time::timeout(
            t,
            self.client
                .get(self.prefix.clone(), Some(GetOptions::new().with_prefix())),
        )
        .await
        .map_err(timed)??;
        let rev = resp.header().map_or(0, |h| h.revision());
        self.members.clear();
        self.connected.clear();
        self.masters.clear();
        let before: Vec<String> = self
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect();
        let mut seen = BTreeSet::new();
        for kv in resp.kvs() {
            if let Some(k) = self.state_key(kv.key()) {
                seen.insert(k);
            }
            self.apply(kv.key(), kv.value(), kv.create_revision(), kv.mod_revision(), true);
        }
        let connected = &self.connected;
        self.connected_since
            .retain(|(d, m), _| connected.get(d).is_some_and(|c| c.contains(m)));
        // Shared state deleted while this member could not read it.
        for gone in before.into_iter().filter(|k| !seen.contains(k)) {
            self.state.lock().unwrap_or_else(|p| p.into_inner()).remove(&gone);
            (self.notify)(Notice::State {
                key: gone,
                value: None,
                revision: rev,
            });
        }
        // Our own keys may have gone, or never been written, while etcd
        // could not hear us.
        if !self.members.contains_key(&self.cfg.member) {
            self.rejoin().await?;
        }
        let me = self.cfg.member.clone();
        let missing: Vec<u64> = self
            .local
            .keys()
            .copied()
            .filter(|d| !self.connected.get(d).is_some_and(|c| c.contains(&me)))
            .collect();
        for d in missing {
            let key = format!("{}switches/{}/{}", self.prefix, dpid_key(d), me);
            let opts = PutOptions::new().with_lease(self.lease);
            tokio::time::timeout(t, self.client.put(key, "", Some(opts)))
                .await
                .map_err(timed)??;
            self.connected.entry(d).or_default().insert(me.clone());
        }
        let opts = WatchOptions::new().with_prefix().with_start_revision(rev + 1);
        let watch = tokio::time::timeout(t, self.client.watch(self.prefix.clone(), Some(opts)))
            .await
            .map_err(timed)??;
        self.failures = 0;
        if !self.reachable {
            self.reachable = true;
            self.view.lock().unwrap_or_else(|p| p.into_inner()).etcd_reachable = true;
            (self.notify)(Notice::Etcd {
                reachable: true,
                detail: "etcd answers again".into(),
            });
        }
        self.reconcile().await;
        Ok(watch)
    }

    /// The shared state's key (relative to `state/`) of an etcd key.
    pub(super) fn state_key(&self, key: &[u8]) -> Option<String> {
        let rest = std::str::from_utf8(key).ok()?.strip_prefix(&self.prefix)?;
        rest.strip_prefix("state/").map(str::to_string)
    }

    /// One key put or deleted.
    pub(super) fn apply(&mut self, key: &[u8], value: &[u8], create_rev: i64, mod_rev: i64, put: bool) {
        if let Some(k) = self.state_key(key) {
            let value = if put {
                // Only this crate's callers write here, always JSON.
                Some(serde_json::from_slice(value).unwrap_or(serde_json::Value::Null))
            } else {
                None
            };
            {
                let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
                match &value {
                    Some(v) => s.insert(k.clone(), (v.clone(), mod_rev)),
                    None => s.remove(&k),
                };
            }
            (self.notify)(Notice::State {
                key: k,
                value,
                revision: mod_rev,
            });
            return;
        }
        let Some(rest) = std::str::from_utf8(key).ok().and_then(|k| k.strip_prefix(&self.prefix)) else {
            return;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        match parts.as_slice() {
            ["members", name] => {
                if put {
                    let v: serde_json::Value = serde_json::from_slice(value).unwrap_or_default();
                    let lease = v["lease"].as_i64().unwrap_or(0);
                    let probe = v["probe"].as_str().unwrap_or("").to_string();
                    self.members.insert(name.to_string(), (lease, probe));
                } else {
                    self.members.remove(*name);
                }
            }
            ["switches", d, name] => {
                let Ok(d) = u64::from_str_radix(d, 16) else { return };
                if put {
                    self.connected.entry(d).or_default().insert(name.to_string());
                    self.connected_since
                        .entry((d, name.to_string()))
                        .or_insert_with(Instant::now);
                } else {
                    if let Some(s) = self.connected.get_mut(&d) {
                        s.remove(*name);
                    }
                    self.connected_since.remove(&(d, name.to_string()));
                }
            }
            ["masters", d] => {
                let Ok(d) = u64::from_str_radix(d, 16) else { return };
                if put {
                    let name = String::from_utf8_lossy(value).into_owned();
                    self.masters.insert(d, (name, create_rev));
                } else {
                    self.masters.remove(&d);
                }
            }
            _ => {}
        }
    }
}
