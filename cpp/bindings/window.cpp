// bloomkit._core.WindowSpec: the window arithmetic of window.hpp and its
// sizing (sizing.hpp) for python/bloomkit/_window.py. Conversion only.
#include <bloomkit/sizing.hpp>
#include <bloomkit/window.hpp>

#include <pybind11/pybind11.h>

#include <string>

namespace bloomkit_py {

namespace py = pybind11;
using bloomkit::WindowSpec;
using bloomkit::WindowUnit;

void bind_window(py::module_& m) {
    py::class_<WindowSpec>(m, "WindowSpec", "A sliding window of generations (bloomkit/window.hpp).")
        .def(py::init(&WindowSpec::parse), py::arg("text"), py::arg("generations"))
        .def_static("of_keys", &WindowSpec::of_keys, py::arg("keys"), py::arg("generations"))
        .def_static("of_seconds", &WindowSpec::of_seconds, py::arg("seconds"), py::arg("generations"))
        .def_property_readonly("unit",
                               [](const WindowSpec& w) { return w.unit() == WindowUnit::Keys ? "keys" : "seconds"; })
        .def_property_readonly("generations", &WindowSpec::generations)
        .def_property_readonly("length",
                               [](const WindowSpec& w) -> py::object {
                                   if (w.unit() == WindowUnit::Keys) return py::int_(w.keys());
                                   return py::float_(w.seconds());
                               })
        .def_property_readonly("interval",
                               [](const WindowSpec& w) -> py::object {
                                   if (w.unit() == WindowUnit::Keys) return py::int_(w.interval_keys());
                                   return py::float_(w.interval_seconds());
                               })
        .def_property_readonly("text", &WindowSpec::text)
        .def("generation_at", &WindowSpec::generation_at, py::arg("now"))
        .def("generation_after", &WindowSpec::generation_after, py::arg("keys_seen"))
        .def("oldest_live", &WindowSpec::oldest_live, py::arg("current"))
        .def("is_live", &WindowSpec::is_live, py::arg("generation"), py::arg("current"))
        .def("slot", &WindowSpec::slot, py::arg("generation"))
        .def(
            "generation_error_rate",
            [](const WindowSpec& w, double error_rate) {
                return bloomkit::window_generation_error_rate(error_rate, w.generations());
            },
            py::arg("error_rate"), "Each generation's rate, 1 - (1 - error_rate)^(1/g) (sizing.hpp).")
        .def(
            "generation_capacity",
            [](const WindowSpec& w, uint64_t capacity) {
                return bloomkit::window_generation_capacity(capacity, w.generations());
            },
            py::arg("capacity"), "Keys per generation for `capacity` keys per window: ceil(capacity / (g - 1)).")
        .def(
            "__eq__", [](const WindowSpec& a, const WindowSpec& b) { return a == b; }, py::is_operator());
    m.def("window_error_rate", &bloomkit::window_error_rate, py::arg("generation_rate"), py::arg("generations"),
          "The rate of g generations OR-ed, each at generation_rate: 1 - (1 - p_g)^g.");
    m.attr("LIMITS")["window_generations"] =
        py::make_tuple(bloomkit::kMinWindowGenerations, bloomkit::kMaxWindowGenerations);
    m.attr("LIMITS")["default_window_generations"] = bloomkit::kDefaultWindowGenerations;
    m.attr("LIMITS")["window_seconds"] = py::make_tuple(bloomkit::kMinWindowSeconds, bloomkit::kMaxWindowSeconds);
}

}  // namespace bloomkit_py
