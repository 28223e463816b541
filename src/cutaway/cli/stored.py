"""The commands that read stored experiments: `report`, `compare`, `list` and `export`."""

from __future__ import annotations

import argparse
import sys

from cutaway.cli.listing import print_listing
from cutaway.cli.options import FLAME_GRAPHS
from cutaway.cli.shared import EXIT_OK, UsageError, check_outputs, emit, exports, write_document
from cutaway.visible import visible


def cmd_report(args: argparse.Namespace) -> int:
    from cutaway.kept_analysis import analysis_of
    from cutaway.store import Store

    check_outputs(args, [(option, path) for option, _, path in exports(args)])
    store = Store(args.db, create=False)  # reading never creates a store
    # The kept analysis when there is one: analysing imports numpy, which a kept one needs not.
    analysis = analysis_of(
        store,
        store.resolve(args.experiment),
        all_pairs=args.all_pairs,
        estimator=args.estimator,
        confidence=args.confidence,
    )
    emit(analysis, args, args.format)
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from cutaway.compare import VariantMismatch, compare_experiments, variant_map_from_options
    from cutaway.store import Store

    check_outputs(args, [(option, path) for option, _, path in exports(args)])
    store = Store(args.db, create=False)  # reading never creates a store
    first, second = store.resolve(args.first), store.resolve(args.second)
    try:
        variant_map = variant_map_from_options(store, first, second, args.map)
        analysis = compare_experiments(
            store, first, second, all_pairs=args.all_pairs, variant_map=variant_map
        )
    except VariantMismatch as error:
        raise UsageError(str(error)) from None
    emit(analysis, args, args.format)
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from cutaway.store import Store
    from cutaway.store.listing import read_listing

    rows = read_listing(args.db)
    if rows is None:  # a store to migrate, or one with a problem that Store names
        store = Store(args.db, create=False)  # reading never creates a store
        rows = [
            (r.id, r.name, r.status, r.created_at, r.label, r.n_variants, r.n_runs)
            for r in store.list_experiments(on_damaged=_skipped)
        ]
    print_listing(rows, args.db)
    return EXIT_OK


def _skipped(error: Exception) -> None:
    """A damaged experiment that `list` leaves out: the others are still worth listing."""
    print(visible(f"cutaway: warning: left out of the list: {error}"), file=sys.stderr)


def cmd_export(args: argparse.Namespace) -> int:
    from cutaway.kept_analysis import analysis_of
    from cutaway.output_files import write_output_file
    from cutaway.probes.registry import store_format
    from cutaway.report import FORMATS
    from cutaway.report.csv_format import render_runs_csv
    from cutaway.store import Store

    if args.output is not None:
        check_outputs(args, [("-o/--output", args.output)])
    if args.variant is not None and args.format not in FLAME_GRAPHS:
        raise UsageError(f"--variant is for --format {' or '.join(FLAME_GRAPHS)}")
    for option in ("estimator", "confidence"):
        if getattr(args, option) is not None and args.format not in FORMATS:
            formats = ", ".join(sorted(FORMATS))
            raise UsageError(f"--{option} is for the report formats ({formats})")
    store = Store(args.db, create=False)  # reading never creates a store
    experiment_id = store.resolve(args.experiment)
    if args.format == "runs-csv":
        text = render_runs_csv(store.runs(experiment_id))
    elif args.format == "series-csv":
        from cutaway.metrics.series import render_series_csv

        text = render_series_csv(store, experiment_id)
    elif (exported := store_format(args.format)) is not None:  # a probe's, from the store
        try:
            text = exported.render(store, experiment_id, args.variant)
        except ValueError as error:
            raise UsageError(str(error)) from None
    else:
        text = FORMATS[args.format].render(
            analysis_of(store, experiment_id, estimator=args.estimator, confidence=args.confidence)
        )
    if args.output is not None:
        write_output_file(args.output, text, "-o/--output")
    else:
        write_document(text, sys.stdout)
    return EXIT_OK
