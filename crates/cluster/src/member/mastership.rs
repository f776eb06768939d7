//! A member's mastership of switches: the elections it runs for each
//! datapath (claim, resign), what it tells the controller, and the
//! reconciliation after a change of members.

use super::*;

impl Member {
    /// Brings every local switch to the role the keys give this member,
    /// claims and resigns as placement says, and keeps the probes in step
    /// with the members.
    pub(super) async fn reconcile(&mut self) {
        let me = self.cfg.member.clone();
        // Probes: one task per other member.
        self.probes.retain(|name, task| {
            let keep = name != &me && self.members.contains_key(name) && !task.is_finished();
            if !keep {
                task.abort();
            }
            keep
        });
        for (name, (lease, probe)) in &self.members {
            if name == &me || self.probes.contains_key(name) {
                continue;
            }
            let Ok(addr) = probe.parse::<SocketAddr>() else {
                continue;
            };
            let task = tokio::spawn(probe_member(
                addr,
                name.clone(),
                *lease,
                self.cfg.probe_every,
                self.cfg.probe_misses,
                self.tx.clone(),
            ));
            self.probes.insert(name.clone(), task);
        }
        if !self.reachable {
            return;
        }
        let now = Instant::now();
        let dpids: Vec<u64> = self.local.keys().copied().collect();
        for d in dpids {
            // The member placement prefers among all the live ones; if it
            // does not have the switch connected, the one it prefers among
            // those that do (after `claim_grace`, the time the switch takes
            // to connect to every member).
            let connected = self.connected.get(&d);
            let is_connected = |m: &str| connected.is_some_and(|c| c.contains(m));
            let wanted = crate::placement::preferred(d, self.members.keys().map(String::as_str)).map(str::to_string);
            let wanted_here = wanted.as_deref().is_some_and(&is_connected);
            let fallback =
                crate::placement::preferred(d, self.members.keys().map(String::as_str).filter(|m| is_connected(m)))
                    .map(str::to_string);
            match self.masters.get(&d).cloned() {
                None => {
                    let since = self.local.get(&d).copied().flatten().unwrap_or(now);
                    self.local.insert(d, Some(since));
                    let waited = now.duration_since(since);
                    let mine = wanted.as_deref() == Some(me.as_str())
                        || (!wanted_here && fallback.as_deref() == Some(me.as_str()) && waited >= self.cfg.claim_grace)
                        || waited >= self.cfg.claim_grace * 2;
                    if mine {
                        self.claim(d).await;
                    }
                }
                Some((m, rev)) => {
                    self.local.insert(d, None);
                    if m == me {
                        self.tell(d, Role::Master, rev, &m);
                        let warm = wanted.as_ref().is_some_and(|w| {
                            self.connected_since
                                .get(&(d, w.clone()))
                                .is_some_and(|t| now.duration_since(*t) >= self.cfg.handover_after)
                        });
                        if wanted_here && wanted.as_deref() != Some(me.as_str()) && warm {
                            self.resign(d).await;
                        }
                    } else {
                        self.tell(d, Role::Slave, rev, &m);
                    }
                }
            }
        }
        let mut v = self.view.lock().unwrap_or_else(|p| p.into_inner());
        v.members = self.members.iter().map(|(n, (_, p))| (n.clone(), p.clone())).collect();
        v.masters = self
            .masters
            .iter()
            .map(|(d, (m, r))| (*d, (m.clone(), *r as u64)))
            .collect();
        v.connected = self.connected.clone();
    }

    pub(super) fn tell(&mut self, dpid: u64, role: Role, rev: i64, master: &str) {
        if self.told.get(&dpid) == Some(&(role, rev)) {
            return;
        }
        self.told.insert(dpid, (role, rev));
        // The view says so before anyone is told: a MASTER role request
        // goes out on this notice, the switch's PACKET_INs follow, and
        // what handles them asks `master_of` (the reconciling pass that
        // rewrites the whole view ends only after every switch's claim).
        {
            let mut v = self.view.lock().unwrap_or_else(|p| p.into_inner());
            if role == Role::Master || master != self.cfg.member {
                v.masters.insert(dpid, (master.to_string(), rev as u64));
            } else {
                v.masters.remove(&dpid);
            }
        }
        (self.notify)(Notice::Role {
            dpid,
            role,
            generation: rev as u64,
            master: master.to_string(),
        });
    }

    /// Claims `dpid`'s mastership if nobody holds it.
    pub(super) async fn claim(&mut self, d: u64) {
        let key = format!("{}masters/{}", self.prefix, dpid_key(d));
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key,
                self.cfg.member.clone(),
                Some(PutOptions::new().with_lease(self.lease)),
            )]);
        match self.client.txn(txn).await {
            Ok(r) if r.succeeded() => {
                let rev = r.header().map_or(0, |h| h.revision());
                self.masters.insert(d, (self.cfg.member.clone(), rev));
                let me = self.cfg.member.clone();
                self.local.insert(d, None);
                self.tell(d, Role::Master, rev, &me);
            }
            Ok(_) => {} // somebody else was first: the watch says who
            Err(e) => self.unreachable(e.to_string()),
        }
    }

    /// Gives up `dpid`'s mastership (its preferred member is another, or
    /// the switch left): this member holds back at once, and the next
    /// master's claim tells it its role.
    pub(super) async fn resign(&mut self, d: u64) {
        let key = format!("{}masters/{}", self.prefix, dpid_key(d));
        let txn = Txn::new()
            .when([Compare::value(key.clone(), CompareOp::Equal, self.cfg.member.clone())])
            .and_then([TxnOp::delete(key, None)]);
        match self.client.txn(txn).await {
            Ok(r) if r.succeeded() => {
                if let Some((m, rev)) = self.masters.remove(&d) {
                    if self.local.contains_key(&d) {
                        self.tell(d, Role::Slave, rev, &m);
                    }
                }
            }
            Ok(_) => {}
            Err(e) => self.unreachable(e.to_string()),
        }
    }
}
