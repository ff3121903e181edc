//! Balancing over a large pool: power-of-two-choices looks at two members, not the pool.

use crate::config::parse;
use crate::upstream::Pool;
use std::cell::Cell;

#[test]
fn power_of_two_looks_at_two_members_of_a_large_healthy_pool() {
    let n = 10_000;
    let list: Vec<String> = (0..n)
        .map(|i| format!("127.0.0.{}:{}", 1 + i / 50_000, 10_000 + i % 50_000))
        .collect();
    let yaml = format!(
        "pools: {{ p: {{ backends: [{}], balance: power-of-two-choices }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        list.join(", ")
    );
    let pool = Pool::new(&parse(&yaml).unwrap().pools[0]);
    let members = pool.backends();
    let looks = Cell::new(0);
    for _ in 0..100 {
        looks.set(0);
        let all = |_: &super::Backend| {
            looks.set(looks.get() + 1);
            true
        };
        assert!(super::pick(pool.balance, &pool.cursor, &members, &all).is_some());
        assert_eq!(looks.get(), 2, "two looks, not a pass over the pool");
    }
    // one eligible member: found by the pass
    let only = |b: &super::Backend| b.addr == members[4321].addr;
    assert_eq!(
        super::pick(pool.balance, &pool.cursor, &members, &only),
        Some(4321)
    );
}
