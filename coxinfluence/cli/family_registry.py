"""The command line's table of model families: one :class:`CliFamily` per family in
:data:`CLI_FAMILIES`, added with :func:`register_cli_family` (issue 34).

``coxinfluence audit`` (:mod:`~coxinfluence.cli.audit_command`,
:mod:`~coxinfluence.cli.audit_inputs`) is written once against this table and names no
family. The options choose an entry (:func:`choose_family`): the entry whose ``models`` hold
``--model`` when every option given that chooses a family is one it ``reads``
(``--model cause-specific --status S``: the cause-specific Cox models), else the entry one of
whose own options is given (``--status``/``--cause``/``--cengroup``: Fine-Gray), else the
entry whose ``models`` hold ``--model`` (``cox``, the default, an AFT distribution,
``cause-specific``, ``multistate``). An option another family adds (``--state``,
``--cencode``) that the chosen entry neither adds nor reads is refused. The entry then says
everything the command needs to know about its family:

- which options do not apply (``refused``, refused with a one-line error naming them) and
  its own checks of the options (``check``); its own options (``add_arguments``);
- the option naming the outcome column (``outcome``: ``"event"``, or Fine-Gray's
  ``"status"``), its own role columns (``columns``: Fine-Gray's ``cengroup``), whether rows
  sharing an ``--id`` are one patient's (``subjects``) and whether a ``--strata`` column may
  also be a covariate (``stratum_covariates``: an AFT model's strata are scales);
- the fit (``fit(data, args)``: ``data`` the :class:`~coxinfluence.cli.audit_inputs.AuditData`
  of the CSV file, ``args`` the parsed options);
- how each ``--target kind:values`` is built: the public targets of
  :mod:`coxinfluence.targets`, by :data:`TARGET_KINDS` unless the entry's ``targets``
  override a kind (an AFT model's survival once per stratum, a stratified Cox model's
  survival at the covariate means once per stratum after the fit), with the entry's
  ``target_options`` (the cause-specific models' ``--cause``, the multi-state model's
  ``--state-of-interest``); the test metrics (``brier``, ``ibs``, ``auc``, ``c``: issue 38)
  are of the ``--test`` patients, with the entry's ``metric_options`` (Fine-Gray's cause; its
  entry refuses ``c``).

The cause-specific and multi-state families' entries are in
:mod:`coxinfluence.cli.competing_risks_families`, registered when :mod:`coxinfluence.cli`
is imported (every module of the package is imported through it).

Adding a family to the command line is one table entry, e.g. (a test does this)::

    register_cli_family(CliFamily(
        "mine", models=("mine",), help="mine: my model",
        fit=lambda data, args: my_fit(data.X, data.time, data.outcome)))

after which ``coxinfluence audit DATA.csv --time T --event E --model mine`` audits it (its
fit must be a model ``ci.influence`` audits: one registered with the seam's registry). This
module is where the families' knowledge of the command line lives; the rest of
:mod:`coxinfluence.cli` reads it from here.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import pandas as pd

import coxinfluence as ci
from coxinfluence.data.dispatch import replace
from coxinfluence.influence_functions.seam import label_text

__all__ = ["CliFamily", "TargetKind", "TargetRequest", "CLI_FAMILIES", "TARGET_KINDS",
           "PARAMETER_TARGETS", "DEFAULT_MODEL", "register_cli_family", "cli_family",
           "choose_family", "own_options", "target_kind", "kind_owners", "target_help",
           "stratified_patients", "encode_status"]


@dataclass(frozen=True)
class TargetRequest:
    """What ``--target kind:values`` asks for, as a :class:`TargetKind` builds it.

    ``kind``: the name before the colon; ``numbers``: the values after it (None when none
    are given); ``patients``: the patients of ``--newdata``, else the covariate means (one
    row labelled ``"mean"``); ``newdata``: the ``--newdata`` patients or None; ``strata``:
    the data's stratum columns (a DataFrame) or None; ``test``: the ``--test`` patients
    (covariates ``X``, ``time``, ``outcome``) of a test metric; ``word``: a word after the
    colon (``c:uno``); ``options``: the family's ``metric_options`` (Fine-Gray's cause);
    ``target_options``: the family's ``target_options`` (a cause, states of interest).

    Examples
    --------
    >>> from coxinfluence.cli.family_registry import TargetRequest
    >>> X = pd.DataFrame({"age": [50.0, 60.0]})
    >>> r = TargetRequest("survival", [10.0], X.mean().to_frame("mean").T, None, None)
    >>> r.stratified()[0].index.tolist()
    ['mean']
    """

    kind: str
    numbers: list | None
    patients: pd.DataFrame
    newdata: pd.DataFrame | None = None
    strata: pd.DataFrame | None = None
    #: the test set of ``--test`` (``.X``, ``.time``, ``.outcome``) for a test metric
    test: Any = None
    #: the word after the colon of a kind that takes words (``c:uno``), else None
    word: str | None = None
    #: the family's options of the test metrics (Fine-Gray's ``cause``)
    options: Mapping = field(default_factory=dict)
    #: the family's options of its own target kinds (``CliFamily.target_options``: the
    #: cause-specific models' cause, the multi-state model's states of interest)
    target_options: Mapping = field(default_factory=dict)

    def stratified(self):
        """``(X_new, strata)``: the patients once per stratum (:func:`stratified_patients`).

        Returns
        -------
        tuple
            The new patients (DataFrame) and their stratum labels (None without strata).
        """
        return stratified_patients(self.patients, self.newdata, self.strata)


@dataclass(frozen=True)
class TargetKind:
    """How one ``--target kind[:values]`` is built.

    ``build(request)``: the target (a public target of :mod:`coxinfluence.targets`) from a
    :class:`TargetRequest`; ``values``: ``"none"`` (no colon), ``"required"`` or
    ``"optional"`` numbers after the colon; ``placeholder``: the letter of the values in
    the help (``T`` for times, ``P`` for probabilities); ``after_fit(target, fit,
    request)``: the target once the model is fitted (None: as built); ``needs_test``: a
    metric of the ``--test`` patients; ``words``: words allowed after the colon instead of
    numbers (``c:uno``).

    Examples
    --------
    >>> from coxinfluence.cli.family_registry import TARGET_KINDS
    >>> TARGET_KINDS["survival"].syntax("survival")
    'survival:T1,T2,...'
    """

    build: Callable[[TargetRequest], Any]
    values: str = "none"
    placeholder: str = "T"
    after_fit: Callable[[Any, Any, TargetRequest], Any] | None = None
    #: a metric of the ``--test`` patients (refused without ``--test``)
    needs_test: bool = False
    #: the words allowed after the colon instead of numbers (``c[:harrell|uno]``)
    words: tuple = ()

    def syntax(self, kind):
        """``kind`` as the help writes it.

        Parameters
        ----------
        kind : str
            The name before the colon.

        Returns
        -------
        str
            ``"lp"``, ``"survival:T1,T2,..."``, ``"quantile[:P1,P2,...]"`` or
            ``"c[:harrell|uno]"``.
        """
        if self.words:
            return f"{kind}[:{'|'.join(self.words)}]"
        values = f"{self.placeholder}1,{self.placeholder}2,..."
        return {"none": kind, "required": f"{kind}:{values}",
                "optional": f"{kind}[:{values}]"}[self.values]


def _no_check(args):
    """No checks of the options beyond ``refused``."""


def _subjects_option(args):
    """Rows sharing an ``--id`` are one patient's when ``--subjects`` is given."""
    return bool(args.subjects)


@dataclass(frozen=True)
class CliFamily:
    """One model family of ``coxinfluence audit``: the table entry (module docstring).

    Examples
    --------
    >>> from coxinfluence.cli.family_registry import CLI_FAMILIES
    >>> CLI_FAMILIES["aft"].models
    ('weibull', 'exponential', 'lognormal', 'loglogistic')
    >>> CLI_FAMILIES["fine_gray"].outcome
    'status'
    """

    #: the family's name in the table
    name: str
    #: ``fit(data, args)``: the fitted model of the CSV file's columns and the options
    fit: Callable[[Any, argparse.Namespace], Any]
    #: the ``--model`` values choosing this family (the first: the one the help names)
    models: tuple = ()
    #: the ``--model`` help's words for it
    help: str = ""
    #: the options whose presence chooses this family, whatever ``--model`` says
    chosen_by: tuple = ()
    #: the option naming the outcome column, also its role's name ("event", "status")
    outcome: str = "event"
    #: the family's own role columns: the options naming them (the role's name too)
    columns: tuple = ()
    #: which of ``columns`` may also be covariates
    covariate_columns: tuple = ()
    #: option (the parsed attribute) -> why it does not apply to this family
    refused: Mapping[str, str] = field(default_factory=dict)
    #: the model in words, for those refusals ("a weibull AFT model")
    words: Callable[[argparse.Namespace], str] | None = None
    #: ``check(args)``: a ValueError naming the options that do not go together
    check: Callable[[argparse.Namespace], None] = _no_check
    #: ``subjects(args)``: whether rows sharing an ``--id`` are one patient's
    subjects: Callable[[argparse.Namespace], bool] = _subjects_option
    #: whether a ``--strata`` column may also be a covariate
    stratum_covariates: bool = False
    #: kind -> :class:`TargetKind`, overriding :data:`TARGET_KINDS`
    targets: Mapping[str, TargetKind] = field(default_factory=dict)
    #: ``add_arguments(parser)``: the family's own options
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None
    #: ``metric_options(args)``: keyword arguments of the test metrics (Fine-Gray's cause)
    metric_options: Callable[[argparse.Namespace], dict] = lambda args: {}
    #: ``encode_outcome(data, args)``: the data with the outcome column as the fit reads it
    #: (the options naming its values, as Fine-Gray's ``--cause``, made codes too); its
    #: presence lets the outcome column hold labels (Fine-Gray: status labels -> 0, 1, 2,
    #: ...). None: the outcome column is numeric and read as it is
    encode_outcome: Callable[[Any, argparse.Namespace], Any] | None = None
    #: options another family adds that this family reads too (the cause-specific models:
    #: Fine-Gray's ``status``, ``cause``, ``cencode``); its ``--model`` value chooses it
    #: even when they are given, and they are not refused as another family's
    reads: tuple = ()
    #: ``target_options(args)``: keyword arguments of the family's own target kinds
    #: (:attr:`TargetRequest.target_options`)
    target_options: Callable[[argparse.Namespace], dict] = lambda args: {}

    def describe(self, args):
        """The model in words for a refusal ("a weibull AFT model").

        Parameters
        ----------
        args : argparse.Namespace
            The parsed options.

        Returns
        -------
        str
            ``words(args)``, by default "the <name> model".
        """
        return self.words(args) if self.words is not None else f"the {self.name} model"


#: the family's name -> its entry; :func:`register_cli_family` adds one
CLI_FAMILIES: dict[str, CliFamily] = {}
#: the ``--model`` value used when none is given
DEFAULT_MODEL = "cox"


def register_cli_family(family: CliFamily) -> CliFamily:
    """Add ``family`` to the command line's table (:data:`CLI_FAMILIES`).

    The package's one registration rule (:mod:`coxinfluence.data.dispatch`): an entry
    registered again under the same name replaces the earlier one and becomes the latest;
    of the entries that one of the given options chooses (``chosen_by``), the latest
    registered wins. A ``--model`` value names one family only.

    Parameters
    ----------
    family : CliFamily
        The entry; its ``--model`` values must not be another family's.

    Returns
    -------
    CliFamily
        ``family``.

    Raises
    ------
    ValueError
        If one of its ``--model`` values is another family's.

    Examples
    --------
    >>> from coxinfluence.cli.family_registry import CliFamily, register_cli_family
    >>> register_cli_family(CliFamily("other", None, models=("weibull",)))
    Traceback (most recent call last):
    ...
    ValueError: --model weibull already fits the 'aft' family
    """
    for other in CLI_FAMILIES.values():
        taken = [m for m in family.models if m in other.models]
        if taken and other.name != family.name:
            raise ValueError(f"--model {taken[0]} already fits the {other.name!r} family")
    return replace(CLI_FAMILIES, family.name, family)


def cli_family(name: str) -> CliFamily:
    """The entry of the family ``name``.

    Parameters
    ----------
    name : str
        A name of :data:`CLI_FAMILIES`.

    Returns
    -------
    CliFamily
        Its entry.

    Raises
    ------
    ValueError
        If no family of that name is registered.

    Examples
    --------
    >>> from coxinfluence.cli.family_registry import cli_family
    >>> cli_family("cox").models
    ('cox',)
    """
    if name not in CLI_FAMILIES:
        raise ValueError(f"unknown model family {name!r}; the command line's are "
                         f"{list(CLI_FAMILIES)}")
    return CLI_FAMILIES[name]


def refuse_options(args, model, refused):
    """A ValueError naming the first option of ``refused`` (option -> its words) given."""
    values = vars(args)
    for name, words in refused.items():
        if values[name] not in (None, False):
            raise ValueError(f"{words} does not apply to {model}")


def _given(values, option):
    return values.get(option) not in (None, False)


def own_options(family: CliFamily) -> tuple:
    """The options (parsed attributes) ``family``'s ``add_arguments`` adds.

    Parameters
    ----------
    family : CliFamily
        An entry.

    Returns
    -------
    tuple of str
        Their ``dest`` names.

    Examples
    --------
    >>> from coxinfluence.cli.family_registry import CLI_FAMILIES, own_options
    >>> own_options(CLI_FAMILIES["fine_gray"])
    ('status', 'cause', 'cencode', 'cengroup')
    """
    if family.add_arguments is None:
        return ()
    scratch = argparse.ArgumentParser(add_help=False)
    family.add_arguments(scratch)
    return tuple(a.dest for a in scratch._actions)


def choose_family(args) -> CliFamily:
    """The family the options choose, its options checked.

    The entry whose ``models`` hold ``--model`` when every ``chosen_by`` option given is
    one it ``reads`` (``--model cause-specific --status S``); else the entry one of whose
    ``chosen_by`` options is given (the latest registered, if several:
    :func:`register_cli_family`); else the one whose ``models`` hold ``--model``
    (:data:`DEFAULT_MODEL` when none is given). Its ``check`` runs, an option it
    ``refused`` is refused, and so is an option another entry adds (``add_arguments``)
    that it neither adds nor reads (``--state`` of a Cox model).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``coxinfluence audit``.

    Returns
    -------
    CliFamily
        The entry.

    Raises
    ------
    ValueError
        Naming the options that do not go together or do not apply.

    Examples
    --------
    >>> from coxinfluence.cli import build_parser
    >>> from coxinfluence.cli.family_registry import choose_family
    >>> args = build_parser().parse_args(["audit", "d.csv", "--model", "weibull"])
    >>> choose_family(args).name
    'aft'
    >>> args = build_parser().parse_args(["audit", "d.csv", "--status", "s", "--cause", "1",
    ...                                   "--model", "cause-specific"])
    >>> choose_family(args).name
    'cause_specific'
    """
    values = vars(args)
    model = values["model"]
    named = [f for f in CLI_FAMILIES.values() if model is not None and model in f.models]
    choosing = {o for f in CLI_FAMILIES.values() for o in f.chosen_by if _given(values, o)}
    if named and choosing <= set(named[-1].chosen_by) | set(named[-1].reads):
        chosen = named
    else:
        chosen = [f for f in CLI_FAMILIES.values()
                  if any(_given(values, o) for o in f.chosen_by)]
    if not chosen:
        model = model or DEFAULT_MODEL
        chosen = [f for f in CLI_FAMILIES.values() if model in f.models]
    family = chosen[-1]
    family.check(args)
    refuse_options(args, family.describe(args), family.refused)
    mine = set(own_options(family)) | set(family.reads) | set(family.chosen_by)
    for other in CLI_FAMILIES.values():
        for option in own_options(other):
            if option not in mine and _given(values, option):
                takers = [f"--model {f.models[0]}" for f in CLI_FAMILIES.values()
                          if f.models and option in set(own_options(f)) | set(f.reads)]
                raise ValueError(f"--{option.replace('_', '-')} does not apply to "
                                 f"{family.describe(args)}"
                                 + (f" (it is read by {' or '.join(takers)})" if takers
                                    else ""))
    return family


# ------------------------------------------------------------------- targets

#: ``--target`` values of the model's parameters (no new patients)
PARAMETER_TARGETS = {"coef": ci.targets.Coefficients, "hr": ci.targets.HazardRatios,
                     "tr": ci.targets.TimeRatios}


def _linear_predictor(r):
    return ci.targets.LinearPredictor(r.patients)


def _relative_risk(r):
    return ci.targets.RelativeRisk(r.patients)


def _survival(r):
    return ci.targets.Survival(r.patients, r.numbers)


def _survival_per_stratum(r):
    X_new, labels = r.stratified()
    return ci.targets.Survival(X_new, r.numbers, strata=labels)


def _quantile(r):
    X_new, labels = r.stratified()
    return ci.targets.Quantile(X_new, [0.5] if r.numbers is None else r.numbers,
                               strata=labels)


def _cumulative_incidence(r):
    X_new, labels = r.stratified()
    return ci.targets.CumulativeIncidence(X_new, r.numbers, strata=labels)


def _brier(r):
    t = r.test
    return ci.targets.BrierScore(t.X, t.time, t.outcome, r.numbers, **r.options)


def _ibs(r):
    t = r.test
    return ci.targets.IntegratedBrierScore(t.X, t.time, t.outcome, r.numbers, **r.options)


def _auc(r):
    t = r.test
    return ci.targets.TimeDependentAUC(t.X, t.time, t.outcome, r.numbers, **r.options)


def _concordance(r):
    t = r.test
    return ci.targets.Concordance(t.X, t.time, t.outcome, kind=r.word or "harrell",
                                  **r.options)


#: the ``--target`` kinds of new patients and of the ``--test`` patients (the test
#: metrics, issue 38) every family reads (an entry's ``targets`` override them); whether
#: the model offers the target is its seam's to say
TARGET_KINDS: dict[str, TargetKind] = {
    "lp": TargetKind(_linear_predictor),
    "rr": TargetKind(_relative_risk),
    "survival": TargetKind(_survival, values="required"),
    "quantile": TargetKind(_quantile, values="optional", placeholder="P"),
    "cif": TargetKind(_cumulative_incidence, values="required"),
    "brier": TargetKind(_brier, values="required", needs_test=True),
    "ibs": TargetKind(_ibs, values="required", needs_test=True),
    "auc": TargetKind(_auc, values="required", needs_test=True),
    "c": TargetKind(_concordance, values="optional", needs_test=True,
                    words=("harrell", "uno")),
}


def target_kind(family: CliFamily, kind: str) -> TargetKind | None:
    """The family's :class:`TargetKind` of ``kind`` (its own, else :data:`TARGET_KINDS`'),
    or None."""
    return family.targets.get(kind, TARGET_KINDS.get(kind))


def kind_owners(kind: str) -> list:
    """The ``--model`` values of the families whose own target kinds have ``kind``
    (``absolute-risk``: ``["--model cause-specific"]``), for the refusal of a kind another
    family owns.

    Examples
    --------
    >>> from coxinfluence.cli.family_registry import kind_owners
    >>> kind_owners("state-probability")
    ['--model multistate']
    """
    return [f"--model {f.models[0]}" for f in CLI_FAMILIES.values()
            if f.models and kind in f.targets and kind not in TARGET_KINDS]


def target_help() -> str:
    """Every ``--target`` value of the table, as the help and the errors write them.

    Returns
    -------
    str
        "coef, hr, tr, lp, rr, survival:T1,T2,..., quantile[:P1,P2,...] or cif:T1,T2,...".

    Examples
    --------
    >>> from coxinfluence.cli.family_registry import target_help
    >>> target_help().startswith("coef, hr, tr, lp, rr, survival:T1,T2,...")
    True
    """
    kinds = dict(TARGET_KINDS)
    for family in CLI_FAMILIES.values():
        kinds.update({k: v for k, v in family.targets.items() if k not in kinds})
    names = list(PARAMETER_TARGETS) + [tk.syntax(k) for k, tk in kinds.items()]
    return ", ".join(names[:-1]) + " or " + names[-1]


def stratified_patients(patients, newdata, strata):
    """``(X_new, strata)`` for a new-patient target of a model with a stratum label per
    patient (AFT, Fine-Gray): without strata the patients as they are; the patients of
    ``newdata`` with their stratum column's labels; the covariate means once per stratum
    (labels as in the training data, sorted; a tuple per row for several stratum columns,
    as ``fit_aft`` and ``fit_fine_gray`` label them)."""
    if strata is None:
        return patients, None
    if newdata is not None:
        return newdata, _stratum_labels(newdata, strata.columns)
    labels = sorted(set(_stratum_labels(strata, strata.columns)))
    return _means_per_stratum(patients, labels), labels


def _means_per_stratum(patients, labels):
    rows = pd.concat([patients] * len(labels), ignore_index=True)
    rows.index = [f"mean, stratum {label_text(lab)}" for lab in labels]
    return rows


def _stratum_labels(frame, columns):
    """Each row's stratum: its value of the one stratum column, or the tuple of several."""
    if len(columns) == 1:
        return list(frame[columns[0]])
    return list(frame[list(columns)].itertuples(index=False, name=None))


# ------------------------------------------------------------------- the families

def _fit_cox(data, args):
    return ci.fit_cox(data.X, data.time, data.outcome, start=data.start, id=data.ids,
                      strata=data.strata, weights=data.weights, ties=args.ties or "efron")


def _cox_subjects(args):
    """Cox: rows sharing an ``--id`` are one patient's with ``--start`` (intervals) or
    ``--subjects``."""
    return args.start is not None or bool(args.subjects)


def _cox_survival_per_stratum(target, fit, r):
    """Survival at the covariate means becomes one curve per stratum (each stratum of a
    stratified Cox model has its own baseline hazard); of ``--newdata`` patients, their
    stratum columns say it."""
    labels = fit.data.strata_labels
    if r.newdata is not None or labels is None or len(labels) < 2:
        return target
    return ci.targets.Survival(_means_per_stratum(r.patients, labels), r.numbers,
                               strata=list(labels))


def _fit_aft(data, args):
    return ci.fit_aft(data.X, data.time, data.outcome, args.model, entry=data.start,
                      weights=data.weights, strata=data.strata, id=data.ids)


def _fine_gray_arguments(p):
    fg = p.add_argument_group("competing risks (Fine-Gray, as R's cmprsk::crr)")
    fg.add_argument("--status", default=None,
                    help="status column: 0 = censored, 1, 2, ... the cause of failure, or "
                         "labels (censored, death, ...; see --cencode) (with --cause, instead "
                         "of --event; with --model cause-specific: one Cox model per cause, "
                         "--cause optional)")
    fg.add_argument("--cause", default=None,
                    help="the cause K modelled (crr's failcode), a code of the status column "
                         "or one of its labels: fits the Fine-Gray subdistribution hazard "
                         "model; the other causes compete (with --model cause-specific: the "
                         "cause of --target absolute-risk and of the report's curves, default "
                         "1, the first cause)")
    fg.add_argument("--cencode", default=None,
                    help="a status column of labels: the label of the censored rows (crr's "
                         "cencode; default 'censored' or '0' where the column has it); the "
                         "other labels are the causes, coded 1, 2, ... in sorted order")
    fg.add_argument("--cengroup", default=None,
                    help="censoring-group column: a censoring Kaplan-Meier per group (crr's "
                         "cengroup)")


def _check_fine_gray(args):
    given = ("--cause" if args.cause is not None else
             "--status" if args.status is not None else "--cengroup")
    if args.model is not None:
        raise ValueError(f"--model {args.model} and {given} conflict: --status with --cause "
                         "fits a Fine-Gray model; give one model")
    if args.status is None or args.cause is None:
        event = ("" if args.event is None or args.status is not None else
                 "; --event does not apply to a Fine-Gray model: give the status column "
                 "(0 = censored, 1, 2, ... = the causes) as --status, not --event")
        raise ValueError(f"{given} needs both --status S and --cause K (they fit a "
                         f"Fine-Gray model for cause K){event}")
    if args.demo:
        raise ValueError("--demo (GBSG2) has no competing causes; give a DATA.csv file "
                         "with --status and --cause")


def _no_fine_gray_concordance(r):
    raise ValueError("--target c (the concordance of a survival prediction) is not defined "
                     "for a Fine-Gray model; its test metrics are brier, ibs and auc of the "
                     "cause's cumulative incidence")


def encode_status(data, args):
    """The status column and ``--cause`` as :func:`coxinfluence.fit_fine_gray` (and
    :func:`coxinfluence.fit_cause_specific`) reads them.

    A numeric column is read as it is (0 = censored, 1, 2, ... the causes) and ``--cause``
    must be one of its codes. A column of labels (R's ``transplant$event``: censored, ltx,
    death, withdraw) is coded: the censored rows' label (``--cencode``, default
    "censored" or "0" where the column has it) 0, the other labels 1, 2, ... in sorted
    order; ``--cause`` must be one of them, and ``args.cause`` becomes its code
    (``args.cause_label`` keeps the label). A label not in the column is a one-line error
    naming the labels present. Without ``--cause`` (``args.cause`` None: a family for
    which it is optional) the column is coded and ``args.cause`` stays None.

    Parameters
    ----------
    data : AuditData
        The data file's columns (:mod:`coxinfluence.cli.audit_inputs`).
    args : argparse.Namespace
        The parsed options.

    Returns
    -------
    AuditData
        ``data``, its ``outcome`` the codes and ``outcome_codes`` the labels' codes (None
        for a numeric column).

    Raises
    ------
    ValueError
        If ``--cause`` or ``--cencode`` is not a value of the column.
    """
    import dataclasses

    status, column = data.outcome, dict(data.roles)["status"]
    args.cause_label = args.cause
    if pd.api.types.is_numeric_dtype(status) or pd.api.types.is_bool_dtype(status):
        causes = sorted(label_text(v) for v in pd.unique(status) if v > 0)
        if args.cencode not in (None, "0"):
            raise ValueError(f"--cencode {args.cencode} applies to a status column of labels; "
                             f"{column!r} holds numbers (0 = censored, causes {causes})")
        if args.cause is None:
            return data
        try:
            cause = float(args.cause)
        except ValueError:
            raise ValueError(f"--cause {args.cause} is not a code of the status column "
                             f"{column!r}: its causes are {', '.join(causes)} (0 = "
                             "censored)") from None
        args.cause = int(cause) if cause.is_integer() else cause
        return data
    labels = sorted(str(v) for v in pd.unique(status))
    present = ", ".join(repr(v) for v in labels)
    cencode = args.cencode
    if cencode is None:
        cencode = next((v for v in ("censored", "0") if v in labels), None)
        if cencode is None:
            raise ValueError(f"the status column {column!r} holds the labels {present}: "
                             "name the censored rows' label with --cencode LABEL")
    elif cencode not in labels:
        raise ValueError(f"--cencode {cencode} is not a label of the status column "
                         f"{column!r}: its labels are {present}")
    if args.cause is not None and (str(args.cause) not in labels
                                   or str(args.cause) == cencode):
        raise ValueError(f"--cause {args.cause} is not a cause in the status column "
                         f"{column!r}: its labels are {present} ({cencode!r} = censored)")
    codes = {cencode: 0}
    codes.update((v, k) for k, v in enumerate((v for v in labels if v != cencode), 1))
    if args.cause is not None:
        args.cause = codes[str(args.cause)]
    return dataclasses.replace(data, outcome=status.astype(str).map(codes).astype(int),
                               outcome_codes=codes)


def _fit_fine_gray(data, args):
    return ci.fit_fine_gray(data.X, data.time, data.outcome, cause=args.cause,
                            cengroup=data.family_columns.get("cengroup"),
                            weights=data.weights, strata=data.strata,
                            ties=args.ties or "breslow")


register_cli_family(CliFamily(
    "cox", _fit_cox, models=("cox",), help="cox (the default): Cox proportional hazards",
    subjects=_cox_subjects,
    targets={"survival": TargetKind(_survival, values="required",
                                    after_fit=_cox_survival_per_stratum)}))
register_cli_family(CliFamily(
    "aft", _fit_aft, models=("weibull", "exponential", "lognormal", "loglogistic"),
    help="weibull, exponential, lognormal, loglogistic: a parametric AFT model as R's "
         "survreg",
    words=lambda args: f"a {args.model} AFT model",
    refused={"ties": "--ties (the AFT likelihood has no ties)"},
    stratum_covariates=True,
    targets={"survival": TargetKind(_survival_per_stratum, values="required")}))
register_cli_family(CliFamily(
    "fine_gray", _fit_fine_gray, chosen_by=("cause", "status", "cengroup"),
    help="--status with --cause (no --model) fits a Fine-Gray model instead",
    outcome="status", columns=("cengroup",), covariate_columns=("cengroup",),
    words=lambda args: f"a Fine-Gray model (--cause {args.cause})",
    refused={"event": "--event (a Fine-Gray model reads --status: 0 censored, 1, 2, ... the "
                      "causes)",
             "start": "--start (not supported: one row per subject)",
             "subjects": "--subjects (one row per subject)",
             "cluster": "--cluster (the subjects are the units: crr's sandwich SE)"},
    check=_check_fine_gray, add_arguments=_fine_gray_arguments,
    metric_options=lambda args: {"cause": args.cause}, encode_outcome=encode_status,
    targets={"c": TargetKind(_no_fine_gray_concordance, values="optional", needs_test=True,
                             words=("harrell", "uno"))}))
