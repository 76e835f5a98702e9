"""Output/error filename pattern expansion (translator.slurm.patterns).

Expectations from the sbatch semantics notes, section 8 (print_fields/fname rules) and its test
vector table (`-o logs/%x_%4j.out` -> `logs/name_0042.out` for job 42).
"""
from translator.slurm.patterns import (NO_VAL, PatternContext, default_output_pattern, expand_pattern,
                                       has_expansion)

CTX = PatternContext(job_id=42, job_name="name", user="alice", node="gpu01")


def test_doc_vector():
    assert expand_pattern("logs/%x_%4j.out", CTX) == "logs/name_0042.out"


def test_all_tokens_of_the_batch_script():
    assert expand_pattern("%j %J %s %N %n %t %r %u %x %%", CTX) == "42 42 batch gpu01 0 0 0 alice name %"


def test_array_tokens():
    ctx = PatternContext(job_id=1005, array_job_id=1000, array_task_id=17, job_name="a")
    assert expand_pattern("slurm-%A_%a.out", ctx) == "slurm-1000_17.out"
    assert expand_pattern("%b", ctx) == "7"
    assert expand_pattern("%3a", ctx) == "017"


def test_non_array_percent_a_is_no_val():
    assert expand_pattern("%A_%a", CTX) == f"42_{NO_VAL}"
    assert NO_VAL == 0xFFFFFFFE


def test_padding_capped_at_ten_and_only_for_numbers():
    assert expand_pattern("%12j", CTX) == "0000000042"
    assert expand_pattern("%5x", CTX) == "name"


def test_unknown_token_kept():
    assert expand_pattern("a%qb%", CTX) == "a%qb%"


def test_backslash_disables_expansion():
    # directive `-o out\\_%j` gives the value `out\_%j`: literal file `out_%j`
    assert expand_pattern("out\\_%j", CTX) == "out_%j"
    assert not has_expansion("out\\_%j")
    assert has_expansion("out_%j") and has_expansion("%4a") and not has_expansion("plain.log")


def test_step_tokens():
    ctx = PatternContext(job_id=7, step=3)
    assert expand_pattern("%J.%s", ctx) == "7.3.3"


def test_defaults():
    assert default_output_pattern(False) == "slurm-%j.out"
    assert default_output_pattern(True) == "slurm-%A_%a.out"
