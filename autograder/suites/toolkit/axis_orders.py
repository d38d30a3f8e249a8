"""Known mistakes of a multi-head layer's keys and values entering their products with their axes in the wrong
order (keys.T on 4-D keys, a transpose of the wrong pair, values viewed without their transpose): the switches of
`model.attention` that reproduce each order, and the message that names it."""

import itertools


def keys_axes_mistakes(names):
    """(switches, message) of the keys entering the scores' product with their axes in any order but the
    right one (the last two swapped). `names` {axis of the model's 4-D keys (batch, heads, T, width): its
    name}; an axis left out (CausalAttention's one head) stays in place."""
    moved = sorted(names)
    orders = [order for order in itertools.permutations(moved) if order != (*moved[:-2], moved[-1], moved[-2])]

    def axes(order):
        placed = dict(zip(moved, order))
        return tuple(placed.get(axis, axis) for axis in range(4))

    return [(dict(keys_axes=axes(order)), f"the keys' axes enter the scores' product in the order "
             f"({', '.join(names[i] for i in order)}); the scores are the queries times the keys with their "
             f"last two axes ({names[moved[-2]]}, {names[moved[-1]]}) swapped") for order in orders]


def values_axes_mistakes(names):
    """(switches, message) of the values entering the product with the weights with their 4 axes (`names`,
    in the model's order (batch, heads, T, width)) in any other order."""
    return [(dict(values_axes=order), f"the values' axes enter the product with the weights in the order "
             f"({', '.join(names[i] for i in order)}); the weights multiply each head's values, "
             f"({', '.join(names)})") for order in itertools.permutations(range(4)) if order != (0, 1, 2, 3)]
