//! Merging the members' answers to one list request (`tools/list`, `prompts/list`,
//! `resources/list`, `resources/templates/list`) into the virtual server's answer: each item
//! under its exposed name (hidden ones left out), a name two members expose kept by the first
//! member in the config, members that failed or missed their deadline left out (named, so the
//! caller counts and logs them), and the next position of every member for the merged cursor.
//!
//! Items are the members' own JSON objects, unchanged but for the name; what a member adds to an
//! item (annotations, `_meta`, icons, output schemas) passes through.

use super::cursor::{Page, Position};
use super::names::{Collision, NameMap};
use crate::config::Kind;
use serde_json::{Map, Value};

/// One of the four list methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    /// `tools/list`: `result.tools[].name`.
    Tools,
    /// `prompts/list`: `result.prompts[].name`.
    Prompts,
    /// `resources/list`: `result.resources[].uri`.
    Resources,
    /// `resources/templates/list`: `result.resourceTemplates[].uriTemplate`.
    Templates,
}

impl List {
    /// The list a method asks for, if it is one.
    pub fn of_method(method: &str) -> Option<List> {
        Some(match method {
            "tools/list" => List::Tools,
            "prompts/list" => List::Prompts,
            "resources/list" => List::Resources,
            "resources/templates/list" => List::Templates,
            _ => return None,
        })
    }

    /// The result's array key.
    pub fn key(self) -> &'static str {
        match self {
            List::Tools => "tools",
            List::Prompts => "prompts",
            List::Resources => "resources",
            List::Templates => "resourceTemplates",
        }
    }

    /// The item's field that names it.
    pub fn name_field(self) -> &'static str {
        match self {
            List::Tools | List::Prompts => "name",
            List::Resources => "uri",
            List::Templates => "uriTemplate",
        }
    }

    /// The kind of name its items carry.
    pub fn kind(self) -> Kind {
        match self {
            List::Tools => Kind::Tool,
            List::Prompts => Kind::Prompt,
            List::Resources | List::Templates => Kind::Resource,
        }
    }
}

/// What one member answered to its part of a list request.
#[derive(Debug, Clone)]
pub enum Part {
    /// A `result` object.
    Listed(Map<String, Value>),
    /// No usable answer (an error, a lost connection, the deadline): the reason, for the metric.
    Failed(&'static str),
}

/// The merged answer.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    /// The items, members in config order, each member's in its own order.
    pub items: Vec<Value>,
    /// Where every member is now (the next cursor when not finished).
    pub position: Position,
    /// Names two members exposed: who kept each.
    pub collisions: Vec<Collision>,
    /// Members left out of this answer and why (member index, reason).
    pub left_out: Vec<(usize, &'static str)>,
}

/// Merges `parts` (member index and what it answered, for the members asked) into one answer.
/// `before` is the position the request's cursor carried (or the first page's), so members not
/// asked this time keep where they were. `map` learns what each member listed, so calls find
/// bare names.
pub fn merge(
    map: &mut NameMap,
    list: List,
    before: &Position,
    parts: Vec<(usize, Part)>,
) -> Merged {
    let mut merged = Merged {
        position: before.clone(),
        ..Merged::default()
    };
    let mut parts = parts;
    parts.sort_by_key(|(i, _)| *i);
    let mut kept: Vec<(usize, Vec<(String, Value)>)> = Vec::new();
    for (index, part) in parts {
        let member = map.members()[index].name.clone();
        let mut result = match part {
            Part::Listed(result) => result,
            Part::Failed(reason) => {
                // a failed page is asked again with the same cursor on the next request
                merged.left_out.push((index, reason));
                continue;
            }
        };
        let next = match result.remove("nextCursor") {
            Some(Value::String(c)) if !c.is_empty() => Page::Next(c),
            _ => Page::Done,
        };
        let continuing = before.members.contains_key(&member);
        merged.position.members.insert(member, next);
        let items = match result.remove(list.key()) {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        };
        let mut exposed_items = Vec::with_capacity(items.len());
        for mut item in items {
            let Some(own) = item.get(list.name_field()).and_then(Value::as_str) else {
                continue; // an item without its name cannot be called: not exposed
            };
            let own = own.to_owned();
            let Some(exposed) = map.expose(index, list.kind(), &own) else {
                continue;
            };
            if let Some(obj) = item.as_object_mut() {
                obj.insert(list.name_field().into(), Value::String(exposed.clone()));
            }
            exposed_items.push((own, item));
        }
        let owns: Vec<&str> = exposed_items.iter().map(|(own, _)| own.as_str()).collect();
        // a later page of this member adds to its earlier ones; a first page replaces them
        let learnt = if continuing {
            map.learn_more(index, list.kind(), &owns)
        } else {
            map.learn(index, list.kind(), &owns)
        };
        merged.collisions.extend(learnt);
        kept.push((index, exposed_items));
    }
    let losers: Vec<(usize, String)> = merged
        .collisions
        .iter()
        .map(|c| (c.left_out, c.exposed.clone()))
        .collect();
    for (index, items) in kept {
        for (_, item) in items {
            let name = item
                .get(list.name_field())
                .and_then(Value::as_str)
                .unwrap_or("");
            if losers.iter().any(|(i, n)| *i == index && n == name) {
                continue;
            }
            merged.items.push(item);
        }
    }
    merged
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
