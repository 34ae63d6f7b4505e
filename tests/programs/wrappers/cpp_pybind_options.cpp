// style: the candidate's own PYBIND11_MODULE with py::arg defaults and a docstring
// functions: none
#include <torch/extension.h>
#include <pybind11/pybind11.h>
namespace py = pybind11;
torch::Tensor scale(torch::Tensor x, double s) { return x * s; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "scale";
    m.def("scale", &scale, "scale a tensor", py::arg("x"), py::arg("s") = 2.0);
}
