"""`python -m bench` (or `make bench`): run every benchmark and print its table."""

from stepwise.local.defaults import apply_local_defaults

# before any handler module creates its Powertools logger
apply_local_defaults()

from bench import (  # noqa: E402
    abandoned_streams,
    adversarial_inputs,
    cold_start,
    context_cost,
    cost_model,
    first_step,
    loop_overhead,
    mcp_transports,
    openapi_import,
    parse_time,
    prompt_cache,
    serve_throughput,
    store_query,
    tool_search,
    tool_sets,
)

if __name__ == "__main__":
    loop_overhead.main()
    print()
    init_ms = cold_start.main()
    print()
    first_step.main()
    print()
    cost_model.main(init_ms)
    print()
    serve_throughput.main()
    print()
    store_query.main()
    print()
    openapi_import.main()
    print()
    parse_time.main()
    print()
    adversarial_inputs.main()
    print()
    tool_sets.main()
    print()
    tool_search.main()
    print()
    prompt_cache.main()
    print()
    mcp_transports.main()
    print()
    context_cost.main()
    print()
    abandoned_streams.main()
