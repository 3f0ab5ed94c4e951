"""`python -m bench` (or `make bench`): run every benchmark and print its table."""

from stepwise.local.defaults import apply_local_defaults

# before any handler module creates its Powertools logger
apply_local_defaults()

from bench import cold_start, cost_model, loop_overhead, serve_throughput, store_query  # noqa: E402

if __name__ == "__main__":
    loop_overhead.main()
    print()
    init_ms = cold_start.main()
    print()
    cost_model.main(init_ms)
    print()
    serve_throughput.main()
    print()
    store_query.main()
