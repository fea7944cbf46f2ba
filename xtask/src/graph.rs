//! The graph work of the layout check: strongly connected components (Tarjan), and one circle
//! through a component to show.

use std::collections::{BTreeMap, BTreeSet};

/// Tarjan's strongly connected components of the graph `0..nodes` with `edges`.
pub fn strongly_connected(nodes: usize, edges: &BTreeSet<(usize, usize)>) -> Vec<Vec<usize>> {
    let mut adjacency = vec![Vec::new(); nodes];
    for &(from, to) in edges {
        adjacency[from].push(to);
    }
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        components: Vec<Vec<usize>>,
    }
    fn connect(v: usize, adjacency: &[Vec<usize>], s: &mut State) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &adjacency[v] {
            match s.index[w] {
                None => {
                    connect(w, adjacency, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.components.push(component);
        }
    }
    let mut state = State {
        index: vec![None; nodes],
        low: vec![0; nodes],
        on_stack: vec![false; nodes],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for v in 0..nodes {
        if state.index[v].is_none() {
            connect(v, &adjacency, &mut state);
        }
    }
    state.components
}

/// One cycle through a strongly connected component (breadth-first from its first file back to
/// it), closed: the first file is repeated at the end.
pub fn one_circle(component: &[usize], edges: &BTreeSet<(usize, usize)>) -> Vec<usize> {
    let members: BTreeSet<usize> = component.iter().copied().collect();
    let start = *members.iter().next().unwrap_or(&0);
    let mut previous: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for &(from, to) in edges.range((at, 0)..=(at, usize::MAX)) {
            debug_assert_eq!(from, at);
            if !members.contains(&to) {
                continue;
            }
            if to == start {
                let mut path = vec![start, at];
                let mut node = at;
                while let Some(&p) = previous.get(&node) {
                    path.push(p);
                    node = p;
                }
                path.reverse();
                path.pop();
                path.insert(0, start);
                path.dedup();
                path.push(start);
                return path;
            }
            if to != start && !previous.contains_key(&to) {
                previous.insert(to, at);
                queue.push_back(to);
            }
        }
    }
    component.to_vec()
}
