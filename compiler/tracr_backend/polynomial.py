"""Maps of real-valued s-ops as polynomials, for an exact lowering without lookup tables.

A real-valued ("continuous") s-op, such as a numeric token or a mean of them, has no
finite value set, so tracr's table MLPs cannot compute functions of it. A Map region over
continuous inputs is instead evaluated symbolically, once per value of its categorical
inputs: every continuous input is a symbol, and the operations +, -, *, / by a constant,
`x ^ 2`, `a if c else b` (c categorical) and continuous piecewise-linear choices such as
`0 if x < 0 else x` give a polynomial of degree <= 2 in the symbols and in ReLU terms
relu(linear form). Such a polynomial is computed EXACTLY (up to one rounding per product
and sum) by a gated-ReLU MLP, ReGLU (Shazeer 2020, "GLU Variants Improve Transformer"),
whose unit is relu(a(x)) * b(x) with a, b linear in the residual stream:
- c * x_i:        relu(x_i) * c  +  relu(-x_i) * (-c)
- c * x_i * x_j:  relu(x_i) * c x_j  +  relu(-x_i) * (-c x_j)
- c * relu(l):    relu(l) * c
and a coefficient c that depends on a categorical s-op is its one-hot read out with the
values c(v), which is linear too (blocks.reglu_mlp).

Failures (a division by a real, exp of a real outside a softmax, a comparison of reals
that is not a continuous choice) are values, raised only if the failing branch is the
region's result: `a if c else b` may compute a branch the program never uses there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Union

from rasp_sim.core import graph as g
from rasp_sim.core import semantics
from rasp_sim.base.errors import RaspError, Span

Atom = tuple  # ("leaf", key) or ("relu", LinearForm)
Monomial = tuple  # sorted tuple of atoms; () is the constant term
LinearForm = tuple  # sorted ((atom, coefficient), ...), with atom () for the constant

# Two coefficients closer than this (relative) are one number: a relu pattern compares the
# two branches' difference with a multiple of the condition's linear form.
_SAME = 1e-12


@dataclass(frozen=True)
class Failure:
    """Why a value has no exact lowering, and where."""

    reason: str
    span: Span | None


class Undefined:
    """The program fails here (a RaspError on concrete values): the model is free."""


UNDEFINED = Undefined()


class Poly:
    """sum of coefficient * monomial, monomials being products of atoms."""

    __slots__ = ("terms",)

    def __init__(self, terms: Mapping[Monomial, float] | None = None):
        self.terms: dict[Monomial, float] = {m: c for m, c in (terms or {}).items() if c != 0}

    @staticmethod
    def constant(value: float) -> "Poly":
        return Poly({(): float(value)})

    @staticmethod
    def atom(atom: Atom) -> "Poly":
        return Poly({(atom,): 1.0})

    def __add__(self, other: "Poly") -> "Poly":
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0.0) + c
        return Poly(terms)

    def scaled(self, factor: float) -> "Poly":
        return Poly({m: c * factor for m, c in self.terms.items()})

    def __sub__(self, other: "Poly") -> "Poly":
        return self + other.scaled(-1.0)

    def __mul__(self, other: "Poly") -> "Poly":
        terms: dict[Monomial, float] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2, key=repr))
                terms[m] = terms.get(m, 0.0) + c1 * c2
        return Poly(terms)

    @property
    def degree(self) -> int:
        return max((len(m) for m in self.terms), default=0)

    def linear_form(self) -> LinearForm | None:
        """The polynomial as a linear form (atoms of degree <= 1), or None."""
        if self.degree > 1:
            return None
        return tuple(sorted(((m[0] if m else (), c) for m, c in self.terms.items()), key=repr))

    def is_constant(self) -> bool:
        return all(m == () for m in self.terms)

    def constant_value(self) -> float:
        return self.terms.get((), 0.0)


Value = Union[Poly, Failure, Undefined, Any]  # Any: a concrete atom


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and math.isfinite(float(value)):
        return float(value)
    return None


def as_poly(value: Value) -> Poly | Failure | None:
    """A symbolic value or finite number as a Poly; a Failure as is; None otherwise."""
    if isinstance(value, (Poly, Failure)):
        return value
    number = _number(value)
    return None if number is None else Poly.constant(number)


@dataclass(frozen=True)
class Comparison:
    """`difference op 0` with a linear difference: only usable as a where's condition."""

    difference: Poly
    op: str


def relu_choice(condition: Comparison, then: Poly, otherwise: Poly,
                span: Span | None) -> Poly | Failure:
    """`then if difference op 0 else otherwise`, when it is continuous in the difference:
    then - otherwise = k * (-difference) for < and <=, k * difference for > and >=, so the
    result is otherwise + k * relu(-difference) (resp. relu(difference)): e.g.
    `0 if x < 0 else x` = x + relu(-x) = max(x, 0). Discontinuous choices fail."""
    gap = then - otherwise
    if not gap.terms:
        return otherwise
    sign = -1.0 if condition.op in ("<", "<=") else 1.0
    direction = condition.difference.scaled(sign)
    monomial = next(iter(gap.terms))
    if monomial not in direction.terms:
        return Failure("chooses between values by comparing real numbers, and the choice "
                       "is not continuous (no exact ReLU form)", span)
    k = gap.terms[monomial] / direction.terms[monomial]
    rest = gap - direction.scaled(k)
    scale = max(abs(c) for c in gap.terms.values())
    if any(abs(c) > _SAME * scale for c in rest.terms.values()):
        return Failure("chooses between values by comparing real numbers, and the choice "
                       "is not continuous (no exact ReLU form)", span)
    form = direction.linear_form()
    assert form is not None  # comparisons are built from linear differences only
    return otherwise + Poly.atom(("relu", form)).scaled(k)


def apply_op(node: g.Map, args: list[Value], concrete: Any) -> Value:
    """The Map `node` on symbolic arguments; `concrete(args)` evaluates plain atoms."""
    span = node.span
    for a in args:
        if isinstance(a, Failure) and node.op != "where":
            return a
    if node.op == "where":
        condition, then, otherwise = args
        if isinstance(condition, Failure):
            return condition
        if isinstance(condition, Undefined):
            return UNDEFINED
        if isinstance(condition, Comparison):
            t, o = as_poly(then), as_poly(otherwise)
            if isinstance(t, Failure):
                return t
            if isinstance(o, Failure):
                return o
            if t is None or o is None:
                return Failure("chooses a non-number by comparing real numbers", span)
            return relu_choice(condition, t, o, span)
        if isinstance(condition, Poly):
            return Failure("uses a real number as a condition", span)
        return semantics.where(condition, then, otherwise)
    if any(isinstance(a, Undefined) for a in args):
        return UNDEFINED
    if not any(isinstance(a, (Poly, Comparison)) for a in args):
        try:
            return concrete(args)
        except RaspError:
            return UNDEFINED
    return _symbolic(node, args, span)


def _symbolic(node: g.Map, args: list[Value], span: Span | None) -> Value:
    op = node.op
    polys: list[Poly] = []
    for a in args:  # no Failure reaches here: apply_op returned it
        poly = None if isinstance(a, Comparison) else as_poly(a)
        if not isinstance(poly, Poly):
            return Failure(f"applies '{op}' to a real number and a value that is not a "
                           "number", span)
        polys.append(poly)
    if op in ("+", "-", "*") and len(polys) == 2:
        a, b = polys
        return a + b if op == "+" else (a - b if op == "-" else a * b)
    if op == "neg":
        return polys[0].scaled(-1.0)
    if op == "pos":
        return polys[0]
    if op == "/" and len(polys) == 2:
        if polys[1].is_constant() and polys[1].constant_value() != 0:
            return polys[0].scaled(1.0 / polys[1].constant_value())
        return Failure("divides by a real-valued s-op; a quotient of reals has no exact "
                       "lowering with ReLU or gated MLPs (only a softmax's normalisation, "
                       "exp(a) / sum(sel, exp(a)), is computed exactly, by attention)", span)
    if op == "^" and len(polys) == 2 and polys[1].is_constant() \
            and polys[1].constant_value() in (0.0, 1.0, 2.0):
        power = int(polys[1].constant_value())
        return Poly.constant(1.0) if power == 0 else (polys[0] if power == 1
                                                      else polys[0] * polys[0])
    if op in ("<", "<=", ">", ">=") and len(polys) == 2:
        difference = polys[0] - polys[1]
        if difference.degree > 1:
            return Failure("compares a nonlinear function of real numbers", span)
        return Comparison(difference, op)
    return Failure(f"applies '{op}' to a real-valued s-op; only +, -, *, / by a constant, "
                   "^ 2, and continuous piecewise-linear choices are lowered exactly", span)


def leaf_atoms(polys: Iterable[Poly]) -> set:
    """The leaf keys the polynomials use (inside relu forms too)."""
    keys = set()
    for poly in polys:
        for monomial in poly.terms:
            for atom in monomial:
                if atom[0] == "leaf":
                    keys.add(atom[1])
                else:
                    keys.update(a[1] for a, _ in atom[1] if a)
    return keys
