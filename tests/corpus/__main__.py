"""`python -m tests.corpus` (or `make corpus`): print the corpus pass rate per protocol and the failures."""

from tests.corpus.rates import all_results, pass_rate

if __name__ == "__main__":
    print("| protocol | cases | passed | rate |")
    print("| --- | ---: | ---: | ---: |")
    failures = []
    for protocol, results in all_results().items():
        passed = sum(result.passed for result in results)
        print(f"| {protocol} | {len(results)} | {passed} | {pass_rate(results):.1%} |")
        failures += [f"{protocol}/{result.name}: {result.got}" for result in results if not result.passed]
    for failure in failures:
        print("FAILED", failure)
