"""Register placement: A/B banks for `.reg` names, transfer-register and signal numbers.

Banks are chosen by 2-colouring the graph whose edges join the two GPR sources of one
instruction (union-find with parity).  ``.areg``/``.breg`` and registers written by number
(``a3``) pin a name's colour.  The first edge that closes an odd cycle is reported at its
instruction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BANK_A = "@A"  # sentinel nodes standing for the two banks
BANK_B = "@B"


@dataclass
class ParityUnionFind:
    """Sets of nodes with a parity (0 = same bank as the root, 1 = the other bank)."""

    parent: dict[str, str] = field(default_factory=dict)
    parity: dict[str, int] = field(default_factory=dict)

    def find(self, x: str) -> tuple[str, int]:
        if x not in self.parent:
            self.parent[x], self.parity[x] = x, 0
            return x, 0
        path_parity = 0
        node = x
        while self.parent[node] != node:
            path_parity ^= self.parity[node]
            node = self.parent[node]
        root = node
        # path compression keeping parities right
        node, acc = x, path_parity
        while self.parent[node] != root:
            nxt, p = self.parent[node], self.parity[node]
            self.parent[node], self.parity[node] = root, acc
            acc ^= p
            node = nxt
        return root, path_parity

    def union(self, x: str, y: str, parity: int) -> bool:
        """Require parity(x) ^ parity(y) == parity; False if that contradicts earlier unions."""
        rx, px = self.find(x)
        ry, py = self.find(y)
        if rx == ry:
            return (px ^ py) == parity
        self.parent[ry] = rx
        self.parity[ry] = px ^ py ^ parity
        return True


@dataclass
class BankProblem:
    """Why an edge cannot be satisfied (the caller reports it at the instruction)."""

    edge_index: int
    message: str


def bank_node(bank: str) -> str:
    return BANK_A if bank == "A" else BANK_B


def colour_banks(names: list[str], pinned: dict[str, str],
                 edges: list[tuple[str, str]]) -> tuple[dict[str, str], list[BankProblem]]:
    """Bank ("A"/"B") of every name.

    ``pinned`` maps names to a forced bank; edge endpoints are names or the sentinels
    ``@A``/``@B`` (a register written by number).  Free components are oriented to balance
    the two banks.
    """
    uf = ParityUnionFind()
    uf.union(BANK_A, BANK_B, 1)
    problems: list[BankProblem] = []
    for name, bank in pinned.items():
        uf.union(name, bank_node(bank), 0)
    for i, (x, y) in enumerate(edges):
        if x in (BANK_A, BANK_B) and y in (BANK_A, BANK_B):
            continue  # two registers written by number: checked when encoding
        if x == y:
            problems.append(BankProblem(i, f"{_show(x)} is used as both sources; a register "
                                           "lives in one bank only"))
        elif not uf.union(x, y, 1):
            problems.append(BankProblem(i, _conflict_message(x, y, pinned, uf)))
    return _orient(names, uf), problems


def _show(node: str) -> str:
    return {BANK_A: "a bank-A register", BANK_B: "a bank-B register"}.get(node, repr(node))


def _bank_now(node: str, uf: ParityUnionFind) -> str | None:
    root, parity = uf.find(node)
    root_a, parity_a = uf.find(BANK_A)
    if root != root_a:
        return None
    return "A" if parity == parity_a else "B"


def _conflict_message(x: str, y: str, pinned: dict[str, str], uf: ParityUnionFind) -> str:
    why = []
    for n in (x, y):
        if n in pinned:
            why.append(f"{n!r} is forced into bank {pinned[n]}")
        elif n not in (BANK_A, BANK_B) and (bank := _bank_now(n, uf)):
            why.append(f"earlier instructions put {n!r} in bank {bank}")
    reason = "; ".join(why) if why else "earlier instructions pair them so they must share a bank"
    return (f"A/B bank conflict: {_show(x)} and {_show(y)} are the two sources here, so they "
            f"need different banks, but {reason}")


def _orient(names: list[str], uf: ParityUnionFind) -> dict[str, str]:
    root_a, parity_a = uf.find(BANK_A)
    banks: dict[str, str] = {}
    free: dict[str, list[tuple[str, int]]] = {}
    load = {"A": 0, "B": 0}
    for name in names:
        root, p = uf.find(name)
        if root == root_a:
            banks[name] = "A" if p == parity_a else "B"
            load[banks[name]] += 1
        else:
            free.setdefault(root, []).append((name, p))
    for members in free.values():  # in order of first declaration
        n0 = sum(1 for _, p in members if p == 0)
        n1 = len(members) - n0
        keep = max(load["A"] + n0, load["B"] + n1) <= max(load["A"] + n1, load["B"] + n0)
        zero_bank = "A" if keep else "B"
        one_bank = "B" if keep else "A"
        for name, p in members:
            banks[name] = zero_bank if p == 0 else one_bank
        load[zero_bank] += n0
        load[one_bank] += n1
    return banks


def place_in_order(names: list[str], taken: set[int], limit: int,
                   groups: list[list[str]] | None = None) -> tuple[dict[str, int], list[str]]:
    """Lowest free index per name in order; each group gets a consecutive run.

    Returns the placement and the names that did not fit.
    """
    placed: dict[str, int] = {}
    overflow: list[str] = []
    group_of = {n: g for g in groups or [] for n in g}
    used = set(taken)
    for name in names:
        if name in placed or name in overflow:
            continue
        run = group_of.get(name, [name])
        start = _free_run(used, len(run), limit)
        if start is None:
            overflow.extend(n for n in run if n not in placed)
            continue
        for k, member in enumerate(run):
            placed[member] = start + k
            used.add(start + k)
    return placed, overflow


def _free_run(used: set[int], length: int, limit: int) -> int | None:
    for start in range(limit - length + 1):
        if all(start + k not in used for k in range(length)):
            return start
    return None
