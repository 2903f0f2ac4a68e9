"""Reference values for the core engine: sum_to (torch's sum_to_size) and clone."""


def build(w):
    w.case("sum_to/(2,3,4)->(3,1)", lambda x: x.sum_to_size(3, 1), [w.randn(2, 3, 4)])
    w.case("sum_to/(2,1,5)->(5)", lambda x: x.sum_to_size(5), [w.randn(2, 1, 5)])
    w.case("clone/(2,3)", lambda x: x.clone(), [w.randn(2, 3)])
    # Two runs of summed dims, the second followed by a kept one; and a sum
    # over a size-0 dim (zeros).
    w.case("sum_to/(2,3,4,5)->(3,1,5)", lambda x: x.sum_to_size(3, 1, 5), [w.randn(2, 3, 4, 5)])
    w.case("sum_to/(0,3)->(1,3)", lambda x: x.sum_to_size(1, 3), [w.randn(0, 3)])
