//! Changes to the pipeline's tables: FLOW_MOD (its instructions compiled
//! once, its rules added, modified or deleted), GROUP_MOD with the chain
//! checks, METER_MOD, PORT_MOD, and the expiry of timed-out rules.

use super::*;

impl Pipeline {
    pub(super) fn compile_actions(
        &self,
        list: &[v13::Action],
        known: Option<ofwire::oxm::Known>,
    ) -> Result<Vec<Act>, ErrorCode> {
        let acts = actions::compile(list, &|p| self.valid_port(p), known)?;
        for a in &acts {
            if let Act::Group(g) = a {
                if !self.groups.contains_key(g) {
                    return Err(ErrorCode::BadAction(ofwire::error::BadActionCode::BadOutGroup));
                }
            }
        }
        Ok(acts)
    }

    /// `known`: what the rule's match says about the packet (set_field prerequisites).
    pub(super) fn compile_program(
        &self,
        table_id: u8,
        insts: &[Instruction],
        known: Option<ofwire::oxm::Known>,
    ) -> Result<Program, ErrorCode> {
        let mut p = Program::default();
        for i in insts {
            match i {
                Instruction::GotoTable(t) => {
                    if *t <= table_id || *t as usize >= self.tables.len() {
                        return Err(ErrorCode::BadInstruction(BadInstructionCode::BadTableId));
                    }
                    p.goto = Some(*t);
                }
                Instruction::WriteMetadata { metadata, mask } => p.metadata = Some((*metadata, *mask)),
                Instruction::ApplyActions(a) => p.apply = self.compile_actions(a, known)?,
                Instruction::WriteActions(a) => {
                    let acts = self.compile_actions(a, known)?;
                    if acts.iter().any(|a| matches!(a, Act::Output { port: port::TABLE, .. })) {
                        return Err(ErrorCode::BadAction(ofwire::error::BadActionCode::BadOutPort));
                    }
                    p.write = acts
                }
                Instruction::ClearActions => p.clear = true,
                Instruction::Meter(m) => {
                    if !self.meters.contains_key(m) {
                        return Err(ErrorCode::MeterModFailed(MeterModFailedCode::UnknownMeter));
                    }
                    p.meter = Some(*m)
                }
                Instruction::Experimenter { .. } => {
                    return Err(ErrorCode::BadInstruction(BadInstructionCode::UnknownInst))
                }
            }
        }
        if p.apply
            .iter()
            .any(|a| matches!(a, Act::Output { port: port::TABLE, .. }))
        {
            return Err(ErrorCode::BadAction(ofwire::error::BadActionCode::BadOutPort));
        }
        Ok(p)
    }

    /// Applies a FLOW_MOD. Returns the rules it removed (DELETE), for
    /// FLOW_REMOVED messages.
    pub fn flow_mod(&mut self, fm: &FlowMod, now: Instant) -> Result<Removed, ErrorCode> {
        self.flow_mod_with(fm, now, Some(ofwire::oxm::Known::of_match(&fm.match_.fields)))
    }

    /// A FLOW_MOD that came as OpenFlow 1.0: its set actions have no
    /// prerequisites (on a packet without the header they do nothing).
    pub fn flow_mod_v10(&mut self, fm: &FlowMod, now: Instant) -> Result<Removed, ErrorCode> {
        self.flow_mod_with(fm, now, None)
    }

    pub(super) fn flow_mod_with(
        &mut self,
        fm: &FlowMod,
        now: Instant,
        known: Option<ofwire::oxm::Known>,
    ) -> Result<Removed, ErrorCode> {
        let (value, mask) = matching::keys_of(&fm.match_)?;
        let all_tables = fm.table_id == v13::TABLE_ALL;
        match fm.command {
            FlowModCommand::Add | FlowModCommand::Modify | FlowModCommand::ModifyStrict => {
                if fm.table_id as usize >= self.tables.len() {
                    return Err(fm_err(FlowModFailedCode::BadTableId));
                }
            }
            FlowModCommand::Delete | FlowModCommand::DeleteStrict => {
                if !all_tables && fm.table_id as usize >= self.tables.len() {
                    return Err(fm_err(FlowModFailedCode::BadTableId));
                }
            }
            FlowModCommand::Unknown(_) => return Err(fm_err(FlowModFailedCode::BadCommand)),
        }
        let out = match fm.command {
            FlowModCommand::Add => {
                let program = self.compile_program(fm.table_id, &fm.instructions, known)?;
                self.add(fm, value, mask, program, now)?;
                Vec::new()
            }
            FlowModCommand::Modify | FlowModCommand::ModifyStrict => {
                let program = self.compile_program(fm.table_id, &fm.instructions, known)?;
                let strict = fm.command == FlowModCommand::ModifyStrict;
                let table = &self.tables[fm.table_id as usize].rules;
                let targets: Vec<Arc<Rule>> = if strict {
                    table
                        .find_strict(&value, &mask, fm.priority)
                        .filter(|r| cookie_ok(r, fm))
                        .cloned()
                        .into_iter()
                        .collect()
                } else {
                    table.select(|r| r.within(&value, &mask) && cookie_ok(r, fm))
                };
                let reset = fm.flags & v13::flow_mod_flags::RESET_COUNTS != 0;
                for old in targets {
                    let new = Rule {
                        instructions: fm.instructions.clone(),
                        program: program.clone(),
                        counters: if reset {
                            Arc::new(RuleCounters::default())
                        } else {
                            old.counters.clone()
                        },
                        match_: old.match_.clone(),
                        ..*old_fields(&old)
                    };
                    self.tables[fm.table_id as usize].rules.insert(Arc::new(new));
                }
                Vec::new()
            }
            FlowModCommand::Delete | FlowModCommand::DeleteStrict => {
                let strict = fm.command == FlowModCommand::DeleteStrict;
                let tables: Vec<usize> = if all_tables {
                    (0..self.tables.len()).collect()
                } else {
                    vec![fm.table_id as usize]
                };
                let mut removed = Vec::new();
                for t in tables {
                    let table = &self.tables[t].rules;
                    let targets: Vec<Arc<Rule>> = if strict {
                        table
                            .find_strict(&value, &mask, fm.priority)
                            .filter(|r| cookie_ok(r, fm) && r.program.outputs_to(fm.out_port, fm.out_group))
                            .cloned()
                            .into_iter()
                            .collect()
                    } else if mask.is_zero()
                        && fm.cookie_mask == 0
                        && fm.out_port == port::ANY
                        && fm.out_group == v13::GROUP_ANY
                    {
                        table.iter().cloned().collect()
                    } else {
                        table.select(|r| {
                            r.within(&value, &mask)
                                && cookie_ok(r, fm)
                                && r.program.outputs_to(fm.out_port, fm.out_group)
                        })
                    };
                    for r in targets {
                        removed.push((r, FlowRemovedReason::Delete));
                    }
                }
                self.remove_rules(&removed);
                removed
            }
            FlowModCommand::Unknown(_) => unreachable!("checked above"),
        };
        self.generation += 1;
        Ok(out)
    }

    pub(super) fn add(
        &mut self,
        fm: &FlowMod,
        value: Key,
        mask: Key,
        program: Program,
        now: Instant,
    ) -> Result<(), ErrorCode> {
        let t = fm.table_id as usize;
        if fm.flags & v13::flow_mod_flags::CHECK_OVERLAP != 0
            && self.tables[t].rules.iter().any(|r| {
                r.priority == fm.priority && r.overlaps(&value, &mask) && !(r.value == value && r.mask == mask)
            })
        {
            return Err(fm_err(FlowModFailedCode::Overlap));
        }
        let replacing = self.tables[t].rules.find_strict(&value, &mask, fm.priority).cloned();
        if replacing.is_none() && self.rule_count() >= self.max_rules {
            return Err(fm_err(FlowModFailedCode::TableFull));
        }
        let counters = match (&replacing, fm.flags & v13::flow_mod_flags::RESET_COUNTS != 0) {
            // 1.3.5 section 6.4: an identical ADD keeps the counters unless
            // RESET_COUNTS is set.
            (Some(old), false) => old.counters.clone(),
            _ => Arc::new(RuleCounters::default()),
        };
        let now_ms = self.now_ms(now);
        counters.last_hit_ms.store(now_ms, std::sync::atomic::Ordering::Relaxed);
        let rule = Rule {
            table_id: fm.table_id,
            priority: fm.priority,
            cookie: fm.cookie,
            flags: fm.flags,
            idle_timeout: fm.idle_timeout,
            hard_timeout: fm.hard_timeout,
            value,
            mask,
            match_: fm.match_.clone(),
            instructions: fm.instructions.clone(),
            program,
            created: now,
            created_ms: now_ms,
            counters,
        };
        if let Some(old) = &replacing {
            if old.idle_timeout != 0 || old.hard_timeout != 0 {
                self.timed_rules -= 1;
            }
        }
        if rule.idle_timeout != 0 || rule.hard_timeout != 0 {
            self.timed_rules += 1;
        }
        self.tables[t].rules.insert(Arc::new(rule));
        Ok(())
    }

    pub(super) fn remove_rules(&mut self, rules: &Removed) {
        for (r, _) in rules {
            if self.tables[r.table_id as usize]
                .rules
                .remove(&r.value, &r.mask, r.priority)
                .is_some()
                && (r.idle_timeout != 0 || r.hard_timeout != 0)
            {
                self.timed_rules -= 1;
            }
        }
        if !rules.is_empty() {
            self.generation += 1;
        }
    }

    /// Rules whose idle or hard timeout has passed at `now`.
    pub fn expired(&self, now: Instant) -> Removed {
        if self.timed_rules == 0 {
            return Vec::new();
        }
        let now_ms = self.now_ms(now);
        let mut out = Vec::new();
        for t in &self.tables {
            for r in t.rules.iter() {
                if r.hard_timeout != 0 && now_ms >= r.created_ms + r.hard_timeout as u64 * 1000 {
                    out.push((r.clone(), FlowRemovedReason::HardTimeout));
                } else if r.idle_timeout != 0 {
                    let last = r.counters.last_hit_ms.load(std::sync::atomic::Ordering::Relaxed);
                    if now_ms >= last + r.idle_timeout as u64 * 1000 {
                        out.push((r.clone(), FlowRemovedReason::IdleTimeout));
                    }
                }
            }
        }
        out
    }

    /// Removes expired rules (those `expired` returned).
    pub fn expire(&mut self, rules: &Removed) {
        self.remove_rules(rules);
    }

    pub fn group_mod(&mut self, gm: &GroupMod, now: Instant) -> Result<Removed, ErrorCode> {
        let gerr = ErrorCode::GroupModFailed;
        if gm.group_id > v13::GROUP_ALL - 1 && !(gm.command == GroupModCommand::Delete && gm.group_id == v13::GROUP_ALL)
        {
            return Err(gerr(GroupModFailedCode::InvalidGroup));
        }
        let mut removed = Vec::new();
        match gm.command {
            GroupModCommand::Add | GroupModCommand::Modify => {
                let exists = self.groups.contains_key(&gm.group_id);
                if gm.command == GroupModCommand::Add && exists {
                    return Err(gerr(GroupModFailedCode::GroupExists));
                }
                if gm.command == GroupModCommand::Modify && !exists {
                    return Err(gerr(GroupModFailedCode::UnknownGroup));
                }
                let group = self.build_group(gm, now)?;
                self.check_chain(&group)?;
                self.groups.insert(gm.group_id, Arc::new(group));
            }
            GroupModCommand::Delete => {
                let ids: Vec<u32> = if gm.group_id == v13::GROUP_ALL {
                    self.groups.keys().copied().collect()
                } else {
                    // A group another group forwards to stays: deleting it
                    // would leave that group's bucket pointing nowhere.
                    if self
                        .groups
                        .values()
                        .any(|g| g.id != gm.group_id && g.children().contains(&gm.group_id))
                    {
                        return Err(gerr(GroupModFailedCode::ChainedGroup));
                    }
                    vec![gm.group_id]
                };
                for id in ids {
                    if self.groups.remove(&id).is_some() {
                        for t in &self.tables {
                            for r in t.rules.select(|r| r.program.uses_group(id)) {
                                removed.push((r, FlowRemovedReason::GroupDelete));
                            }
                        }
                    }
                }
                self.remove_rules(&removed);
            }
            GroupModCommand::Unknown(_) => return Err(gerr(GroupModFailedCode::BadCommand)),
        }
        self.generation += 1;
        Ok(removed)
    }

    pub(super) fn build_group(&self, gm: &GroupMod, now: Instant) -> Result<Group, ErrorCode> {
        let gerr = ErrorCode::GroupModFailed;
        match gm.group_type {
            GroupType::Indirect if gm.buckets.len() != 1 => return Err(gerr(GroupModFailedCode::BadBucket)),
            GroupType::Unknown(_) => return Err(gerr(GroupModFailedCode::BadType)),
            _ => {}
        }
        let mut compiled = Vec::with_capacity(gm.buckets.len());
        for b in &gm.buckets {
            if gm.group_type != GroupType::Select && b.weight != 0 {
                return Err(gerr(GroupModFailedCode::WeightUnsupported));
            }
            if gm.group_type == GroupType::FastFailover {
                if b.watch_port == port::ANY && b.watch_group == v13::GROUP_ANY {
                    return Err(gerr(GroupModFailedCode::BadWatch));
                }
                if b.watch_port != port::ANY && !self.valid_port(b.watch_port) {
                    return Err(gerr(GroupModFailedCode::BadWatch));
                }
            }
            let acts = actions::compile(&b.actions, &|p| self.valid_port(p), None)?;
            for a in &acts {
                if let Act::Group(g) = a {
                    if *g == gm.group_id {
                        return Err(gerr(GroupModFailedCode::Loop));
                    }
                    if !self.groups.contains_key(g) {
                        // As for a flow naming a group that does not exist.
                        return Err(ErrorCode::BadAction(BadActionCode::BadOutGroup));
                    }
                }
            }
            compiled.push(acts);
        }
        Ok(Group {
            id: gm.group_id,
            kind: gm.group_type,
            buckets: gm.buckets.clone(),
            bucket_counters: gm.buckets.iter().map(|_| Counter::default()).collect(),
            compiled,
            counter: Counter::default(),
            created: now,
        })
    }

    /// The group graph with `new` in place of the group of its id: refused
    /// with OFPGMFC_LOOP if a chain through it comes back to it (in one
    /// step or many, on ADD or MODIFY), and with CHAINING_UNSUPPORTED if
    /// a chain through it would be longer than `MAX_GROUP_CHAIN` groups
    /// (the groups above it, forwarding to it, counted too: a MODIFY can
    /// lengthen their chains).
    pub(super) fn check_chain(&self, new: &Group) -> Result<(), ErrorCode> {
        let gerr = ErrorCode::GroupModFailed;
        let children = |g: u32| -> Vec<u32> {
            if g == new.id {
                new.children()
            } else {
                self.groups.get(&g).map(|x| x.children()).unwrap_or_default()
            }
        };
        // Groups in the longest chain from `g` down, `g` counted; None on a
        // loop. The graph without `new` has neither loops nor chains over
        // the limit (every GROUP_MOD kept it so), so this stays shallow.
        fn below(
            g: u32,
            children: &dyn Fn(u32) -> Vec<u32>,
            path: &mut Vec<u32>,
            memo: &mut HashMap<u32, usize>,
        ) -> Option<usize> {
            if path.contains(&g) {
                return None;
            }
            if let Some(&d) = memo.get(&g) {
                return Some(d);
            }
            if path.len() > MAX_GROUP_CHAIN {
                // Already too long: no need to go further.
                return Some(1);
            }
            path.push(g);
            let mut deepest = 0;
            for c in children(g) {
                deepest = deepest.max(below(c, children, path, memo)?);
            }
            path.pop();
            memo.insert(g, deepest + 1);
            Some(deepest + 1)
        }
        let down =
            below(new.id, &children, &mut Vec::new(), &mut HashMap::new()).ok_or(gerr(GroupModFailedCode::Loop))?;
        // Groups in the longest chain above `g` (forwarding to it), `g` not
        // counted. Only a MODIFY has any: nothing can name a group before
        // it exists.
        fn above(g: u32, parents: &dyn Fn(u32) -> Vec<u32>, seen: usize) -> usize {
            if seen > MAX_GROUP_CHAIN {
                return 0;
            }
            parents(g)
                .into_iter()
                .map(|p| 1 + above(p, parents, seen + 1))
                .max()
                .unwrap_or(0)
        }
        let parents = |g: u32| -> Vec<u32> {
            self.groups
                .keys()
                .copied()
                .filter(|&p| p != g && children(p).contains(&g))
                .collect()
        };
        let up = if self.groups.contains_key(&new.id) {
            above(new.id, &parents, 0)
        } else {
            0
        };
        if up + down > MAX_GROUP_CHAIN {
            return Err(gerr(GroupModFailedCode::ChainingUnsupported));
        }
        Ok(())
    }

    pub fn meter_mod(&mut self, mm: &MeterMod, now: Instant) -> Result<Removed, ErrorCode> {
        let merr = ErrorCode::MeterModFailed;
        // Up to OFPM_MAX; the virtual meters SLOWPATH and CONTROLLER are
        // not offered; OFPM_ALL names every meter, so only a DELETE takes it.
        let all = mm.meter_id == 0xffff_ffff && mm.command == MeterModCommand::Delete;
        if mm.meter_id == 0 || (mm.meter_id > 0xffff_0000 && !all) {
            return Err(merr(MeterModFailedCode::InvalidMeter));
        }
        let mut removed = Vec::new();
        match mm.command {
            MeterModCommand::Add | MeterModCommand::Modify => {
                let exists = self.meters.contains_key(&mm.meter_id);
                if mm.command == MeterModCommand::Add && exists {
                    return Err(merr(MeterModFailedCode::MeterExists));
                }
                if mm.command == MeterModCommand::Modify && !exists {
                    return Err(merr(MeterModFailedCode::UnknownMeter));
                }
                use ofwire::v13::meter_flags::*;
                if mm.flags & KBPS != 0 && mm.flags & PKTPS != 0 {
                    return Err(merr(MeterModFailedCode::BadFlags));
                }
                if mm.bands.is_empty() {
                    return Err(merr(MeterModFailedCode::InvalidMeter));
                }
                for b in &mm.bands {
                    match b {
                        v13::MeterBand::Drop { rate, .. } | v13::MeterBand::DscpRemark { rate, .. } => {
                            if *rate == 0 {
                                return Err(merr(MeterModFailedCode::BadRate));
                            }
                        }
                        v13::MeterBand::Experimenter { .. } => return Err(merr(MeterModFailedCode::BadBand)),
                    }
                }
                let meter = Meter {
                    id: mm.meter_id,
                    flags: mm.flags,
                    bands: mm.bands.clone(),
                    state: std::sync::Mutex::new(
                        mm.bands
                            .iter()
                            .map(|_| BandState {
                                tokens: f64::MAX,
                                last: now,
                            })
                            .collect(),
                    ),
                    counter: Counter::default(),
                    band_counters: mm.bands.iter().map(|_| Counter::default()).collect(),
                    created: now,
                };
                self.meters.insert(mm.meter_id, Arc::new(meter));
            }
            MeterModCommand::Delete => {
                let ids: Vec<u32> = if mm.meter_id == 0xffff_ffff {
                    self.meters.keys().copied().collect()
                } else {
                    vec![mm.meter_id]
                };
                for id in ids {
                    if self.meters.remove(&id).is_some() {
                        for t in &self.tables {
                            for r in t.rules.select(|r| r.program.meter == Some(id)) {
                                removed.push((r, FlowRemovedReason::Delete));
                            }
                        }
                    }
                }
                self.remove_rules(&removed);
            }
            MeterModCommand::Unknown(_) => return Err(merr(MeterModFailedCode::BadCommand)),
        }
        self.generation += 1;
        Ok(removed)
    }

    /// PORT_MOD. Returns the new description when something changed.
    pub fn port_mod(&mut self, pm: &v13::PortMod) -> Result<Option<v13::Port>, ErrorCode> {
        let p = self
            .ports
            .get_mut(&pm.port_no)
            .ok_or(ErrorCode::PortModFailed(PortModFailedCode::BadPort))?;
        if p.hw_addr != pm.hw_addr {
            return Err(ErrorCode::PortModFailed(PortModFailedCode::BadHwAddr));
        }
        use port_config::*;
        let supported = PORT_DOWN | NO_RECV | NO_FWD | NO_PACKET_IN;
        if pm.mask & !supported != 0 {
            return Err(ErrorCode::PortModFailed(PortModFailedCode::BadConfig));
        }
        let config = (p.config & !pm.mask) | (pm.config & pm.mask);
        if config == p.config {
            return Ok(None);
        }
        p.config = config;
        let desc = p.desc();
        self.generation += 1;
        Ok(Some(desc))
    }

    pub fn check_table(&self, t: u8) -> Result<(), ErrorCode> {
        if t as usize >= self.tables.len() && t != v13::TABLE_ALL {
            return Err(ErrorCode::BadRequest(BadRequestCode::BadTableId));
        }
        Ok(())
    }

    // ------------------------------------------------------------ forwarding
}

pub(super) fn cookie_ok(r: &Rule, fm: &FlowMod) -> bool {
    r.cookie & fm.cookie_mask == fm.cookie & fm.cookie_mask
}

/// A copy of a rule's fields (for MODIFY, which replaces the instructions).
pub(super) fn old_fields(r: &Rule) -> Box<Rule> {
    Box::new(Rule {
        table_id: r.table_id,
        priority: r.priority,
        cookie: r.cookie,
        flags: r.flags,
        idle_timeout: r.idle_timeout,
        hard_timeout: r.hard_timeout,
        value: r.value,
        mask: r.mask,
        match_: ofwire::oxm::Match::default(),
        instructions: Vec::new(),
        program: Program::default(),
        created: r.created,
        created_ms: r.created_ms,
        counters: r.counters.clone(),
    })
}
