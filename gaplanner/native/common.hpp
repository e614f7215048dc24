// The kernels' bridge to Python: numpy arrays in (through the buffer protocol), numbers and arrays out.
//
// Every kernel entry point is a METH_FASTCALL function `PyObject* name(gp::Args& args)`, registered
// with GP_DEF. Arguments are read by position with a name for the error message; an array argument
// must be C-contiguous and of the kernel's element type, else the call raises TypeError naming it
// (the Python wrappers convert, the kernels never guess). Kernels release the GIL (gp::NoGil) while
// they compute, so a search in another Python thread runs beside them.
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <cstdint>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace gp {

struct ArgumentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A C-contiguous array of up to three dimensions; shape[d] is 1 past ndim.
template <class T>
struct Array {
  T* data = nullptr;
  int ndim = 1;
  int64_t shape[3] = {0, 1, 1};

  int64_t len() const { return shape[0]; }  // Python's len(): the first dimension
  int64_t size() const { return shape[0] * shape[1] * shape[2]; }
  T& operator[](int64_t i) const { return data[i]; }
  T& operator()(int64_t i) const { return data[i]; }
  T& operator()(int64_t i, int64_t j) const { return data[i * shape[1] + j]; }
  T& operator()(int64_t i, int64_t j, int64_t k) const { return data[(i * shape[1] + j) * shape[2] + k]; }
  T* row(int64_t i) const { return data + i * (size() / std::max<int64_t>(shape[0], 1)); }
  // The i-th row of a 2-D array (or the i-th plane of a 3-D one) as an array of one dimension less.
  Array<T> sub(int64_t i) const {
    Array<T> out;
    out.data = row(i);
    out.ndim = std::max(1, ndim - 1);
    out.shape[0] = shape[1];
    out.shape[1] = ndim == 3 ? shape[2] : 1;
    out.shape[2] = 1;
    return out;
  }
};

// Owned scratch memory shaped like an Array (the kernels' np.empty / np.zeros).
template <class T>
struct Buffer {
  std::vector<T> storage;
  Array<T> view;
  explicit Buffer(int64_t n0, int64_t n1 = -1, int64_t n2 = -1, T fill = T()) {
    view.ndim = n2 >= 0 ? 3 : n1 >= 0 ? 2 : 1;
    view.shape[0] = n0;
    view.shape[1] = n1 >= 0 ? n1 : 1;
    view.shape[2] = n2 >= 0 ? n2 : 1;
    storage.assign(static_cast<size_t>(std::max<int64_t>(view.size(), 0)), fill);
    view.data = storage.data();
  }
  T& operator[](int64_t i) { return storage[static_cast<size_t>(i)]; }
  operator Array<T>() const { return view; }
};

template <class T>
constexpr char kind() {
  if constexpr (std::is_same_v<T, bool>) return 'b';
  else if constexpr (std::is_floating_point_v<T>) return 'f';
  else if constexpr (std::is_signed_v<T>) return 'i';
  else return 'u';
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, int8_t>) return "int8";
  else if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
  else if constexpr (std::is_same_v<T, int16_t>) return "int16";
  else if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
  else if constexpr (std::is_same_v<T, int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
  else if constexpr (std::is_same_v<T, int64_t>) return "int64";
  else return "uint64";
}

// The element kind of a buffer format ('i' signed, 'u' unsigned, 'f' float, 'b' bool, 0 other).
inline char format_kind(const char* format) {
  if (format == nullptr) return 'u';  // "B"
  const char* f = format;
  if (*f == '<' || *f == '=' || *f == '@' || *f == '!' || *f == '>') ++f;
  switch (*f) {
    case '?': return 'b';
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': return 'i';
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': return 'u';
    case 'e': case 'f': case 'd': return 'f';
    default: return 0;
  }
}

class Args {
 public:
  Args(PyObject* const* args, Py_ssize_t nargs, const char* function)
      : args_(args), nargs_(nargs), function_(function) {}
  Args(const Args&) = delete;
  Args& operator=(const Args&) = delete;
  ~Args() {
    for (Py_buffer& view : held_) PyBuffer_Release(&view);
  }

  Py_ssize_t count() const { return nargs_; }

  PyObject* object(Py_ssize_t i, const char* name) const {
    if (i >= nargs_) fail(name, "is missing");
    return args_[i];
  }

  // Whether argument i is an array of element type T (to pick a kernel's instantiation).
  template <class T>
  bool is(Py_ssize_t i) const {
    return i < nargs_ && is_array<T>(args_[i]);
  }

  template <class T>
  Array<T> array(Py_ssize_t i, const char* name, bool writable = false) {
    return array_of<T>(object(i, name), name, writable);
  }

  // An array from a tuple argument's item (the Python side passes some kernels' arrays as tuples).
  template <class T>
  Array<T> item(Py_ssize_t i, Py_ssize_t k, const char* name, bool writable = false) {
    PyObject* tuple = object(i, name);
    if (!PyTuple_Check(tuple) || k >= PyTuple_GET_SIZE(tuple)) fail(name, "must be a tuple of arrays");
    return array_of<T>(PyTuple_GET_ITEM(tuple, k), name, writable);
  }

  template <class T>
  Array<T> array_of(PyObject* object, const char* name, bool writable = false) {
    Py_buffer view;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(object, &view, flags) != 0) {
      PyErr_Clear();
      fail(name, writable ? "must be a writable C-contiguous array" : "must be a C-contiguous array");
    }
    held_.push_back(view);
    if (view.itemsize != static_cast<Py_ssize_t>(sizeof(T)) || format_kind(view.format) != kind<T>())
      fail(name, (std::string("must be a ") + type_name<T>() + " array").c_str());
    if (view.ndim < 1 || view.ndim > 3) fail(name, "must have 1 to 3 dimensions");
    Array<T> out;
    out.data = static_cast<T*>(view.buf);
    out.ndim = view.ndim;
    for (int d = 0; d < view.ndim; ++d) out.shape[d] = view.shape[d];
    return out;
  }

  int64_t integer(Py_ssize_t i, const char* name) const {
    PyObject* value = object(i, name);
    int64_t out = PyLong_AsLongLong(value);
    if (out == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      fail(name, "must be an integer of 64 bits");
    }
    return out;
  }

  double real(Py_ssize_t i, const char* name) const {
    double out = PyFloat_AsDouble(object(i, name));
    if (out == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      fail(name, "must be a number");
    }
    return out;
  }

  bool flag(Py_ssize_t i, const char* name) const {
    int out = PyObject_IsTrue(object(i, name));
    if (out < 0) {
      PyErr_Clear();
      fail(name, "must be true or false");
    }
    return out != 0;
  }

  [[noreturn]] void fail(const char* name, const char* problem) const {
    throw ArgumentError(std::string(function_) + "(): " + name + " " + problem);
  }

 private:
  template <class T>
  static bool is_array(PyObject* object) {
    Py_buffer view;
    if (PyObject_GetBuffer(object, &view, PyBUF_FORMAT | PyBUF_STRIDES) != 0) {
      PyErr_Clear();
      return false;
    }
    bool same = view.itemsize == static_cast<Py_ssize_t>(sizeof(T)) && format_kind(view.format) == kind<T>();
    PyBuffer_Release(&view);
    return same;
  }

  PyObject* const* args_;
  Py_ssize_t nargs_;
  const char* function_;
  std::vector<Py_buffer> held_;
};

// The GIL released for the scope: the kernel's computation, after its arguments are read.
class NoGil {
 public:
  NoGil() : state_(PyEval_SaveThread()) {}
  ~NoGil() { PyEval_RestoreThread(state_); }
  NoGil(const NoGil&) = delete;
  NoGil& operator=(const NoGil&) = delete;

 private:
  PyThreadState* state_;
};

// A new numpy array (numpy.empty) and its view; call with the GIL held.
template <class T>
PyObject* new_array(std::initializer_list<int64_t> shape, Array<T>* view) {
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (numpy == nullptr) return nullptr;
  PyObject* dims = PyTuple_New(static_cast<Py_ssize_t>(shape.size()));
  Py_ssize_t d = 0;
  for (int64_t extent : shape) PyTuple_SET_ITEM(dims, d++, PyLong_FromLongLong(extent));
  PyObject* result = PyObject_CallMethod(numpy, "empty", "Os", dims, type_name<T>());
  Py_DECREF(dims);
  Py_DECREF(numpy);
  if (result == nullptr) return nullptr;
  Py_buffer buffer;
  if (PyObject_GetBuffer(result, &buffer, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0) {
    Py_DECREF(result);
    return nullptr;
  }
  view->data = static_cast<T*>(buffer.buf);
  view->ndim = static_cast<int>(shape.size());
  view->shape[0] = view->shape[1] = view->shape[2] = 1;
  d = 0;
  for (int64_t extent : shape) view->shape[d++] = extent;
  PyBuffer_Release(&buffer);  // the array owns its memory; the view stays valid while it lives
  return result;
}

// A numpy array holding a copy of `values` (for results whose size is known only at the end).
template <class T>
PyObject* to_array(const std::vector<T>& values) {
  Array<T> view;
  PyObject* result = new_array<T>({static_cast<int64_t>(values.size())}, &view);
  if (result != nullptr && !values.empty()) std::memcpy(view.data, values.data(), values.size() * sizeof(T));
  return result;
}

inline PyObject* to_py(int64_t value) { return PyLong_FromLongLong(value); }
inline PyObject* to_py(double value) { return PyFloat_FromDouble(value); }
inline PyObject* to_py(bool value) { return PyBool_FromLong(value); }

// Worker threads kept for the process's parallel loops (starting threads per call costs more than a
// small population's decode). One loop runs on them at a time; a loop started while another runs (a
// second Python thread) runs on its caller alone. A forked child builds a pool of its own.
class Pool {
 public:
  static Pool& shared() {
    static Pool* pool = new Pool;
    if (pool->owner_ != getpid()) pool = new Pool;  // after fork the parent's threads are not ours
    return *pool;
  }

  // Runs work() on the caller and on threads - 1 workers; returns when every one has returned.
  bool run(int64_t threads, const std::function<void()>& work) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (static_cast<int64_t>(started_) < threads - 1) {
        std::thread(&Pool::serve, this).detach();
        ++started_;
      }
      job_ = &work;
      wanted_ = running_ = threads - 1;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return running_ == 0; });
    job_ = nullptr;
    return true;
  }

 private:
  void serve() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (wanted_ == 0) continue;
      --wanted_;
      const std::function<void()>* job = job_;
      lock.unlock();
      (*job)();
      lock.lock();
      if (--running_ == 0) done_.notify_all();
    }
  }

  pid_t owner_ = getpid();
  std::mutex busy_, mutex_;
  std::condition_variable wake_, done_;
  const std::function<void()>* job_ = nullptr;
  uint64_t generation_ = 0;
  int64_t started_ = 0, wanted_ = 0, running_ = 0;
};

// Runs body(i) for i in [0, n) on up to `threads` threads (the kernels' prange); each i runs once.
template <class Body>
void parallel_for(int64_t n, int64_t threads, Body&& body) {
  threads = std::max<int64_t>(1, std::min(threads, n));
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  const std::function<void()> work = [&] {
    try {
      for (int64_t i; (i = next.fetch_add(1)) < n;) body(i);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  };
  if (threads == 1 || !Pool::shared().run(threads, work)) work();
  if (error) std::rethrow_exception(error);
}

// Python's floor division and modulo for integers (C++ truncates toward zero).
template <class T>
inline T floor_div(T a, T b) {
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <class T>
inline T floor_mod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

template <PyObject* (*Kernel)(Args&)>
PyObject* entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, const char* name) {
  try {
    Args arguments(args, nargs, name);
    return Kernel(arguments);
  } catch (const ArgumentError& error) {
    PyErr_SetString(PyExc_TypeError, error.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
  return nullptr;
}

}  // namespace gp

// One kernel in a module's method table: GP_DEF(function, "docstring").
#define GP_DEF(function, doc)                                                                   \
  {                                                                                             \
    #function,                                                                                  \
        reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(                         \
            +[](PyObject* self, PyObject* const* args, Py_ssize_t nargs) -> PyObject* {         \
              return gp::entry<function>(self, args, nargs, #function);                         \
            })),                                                                                \
        METH_FASTCALL, doc                                                                      \
  }

// The module itself: GP_MODULE(_name, "docstring", GP_DEF(...), GP_DEF(...)).
#define GP_MODULE(name, doc, ...)                                                                \
  static PyMethodDef name##_methods[] = {__VA_ARGS__, {nullptr, nullptr, 0, nullptr}};           \
  static PyModuleDef name##_module = {PyModuleDef_HEAD_INIT, #name, doc, -1, name##_methods,     \
                                      nullptr, nullptr, nullptr, nullptr};                       \
  PyMODINIT_FUNC PyInit_##name() { return PyModule_Create(&name##_module); }
