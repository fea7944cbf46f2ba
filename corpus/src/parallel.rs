//! Work split over the machine's cores, for index builds: contiguous shares of a slice, one
//! scoped thread each, results in input order.

/// Threads an index build uses: the cores this process may run on (at least 1).
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// `f` applied to every item, the items split into [`threads`] contiguous shares run at once;
/// the results in the items' order.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let share = items.len().div_ceil(threads()).max(1);
    if items.len() <= share {
        return items.iter().map(f).collect();
    }
    std::thread::scope(|scope| {
        let f = &f;
        let running: Vec<_> = items
            .chunks(share)
            .map(|chunk| scope.spawn(move || chunk.iter().map(f).collect::<Vec<R>>()))
            .collect();
        running
            .into_iter()
            .flat_map(|t| match t.join() {
                Ok(results) => results,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// `fold` run over [`threads`] contiguous shares of `items` at once, each share from `init()`,
/// and the shares' results combined by `merge`, in order.
pub(crate) fn fold<T: Sync, A: Send>(
    items: &[T],
    init: impl Fn() -> A + Sync,
    fold: impl Fn(&mut A, &T) + Sync,
    merge: impl Fn(&mut A, A),
) -> A {
    let share = items.len().div_ceil(threads()).max(1);
    let partials: Vec<A> = std::thread::scope(|scope| {
        let (init, fold) = (&init, &fold);
        let running: Vec<_> = items
            .chunks(share)
            .map(|chunk| {
                scope.spawn(move || {
                    let mut acc = init();
                    for item in chunk {
                        fold(&mut acc, item);
                    }
                    acc
                })
            })
            .collect();
        running
            .into_iter()
            .map(|t| match t.join() {
                Ok(acc) => acc,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    let mut total = init();
    for partial in partials {
        merge(&mut total, partial);
    }
    total
}

#[cfg(test)]
mod tests {
    #[test]
    fn map_keeps_the_order_and_fold_sees_every_item() {
        let items: Vec<u64> = (0..10_001).collect();
        assert_eq!(
            super::map(&items, |x| x * 2),
            (0..10_001).map(|x| x * 2).collect::<Vec<_>>()
        );
        assert!(super::map(&Vec::<u64>::new(), |x| *x).is_empty());
        let sum = super::fold(&items, || 0u64, |a, x| *a += x, |a, b| *a += b);
        assert_eq!(sum, 10_000 * 10_001 / 2);
    }
}
