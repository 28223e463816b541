/*
 * cw_spans_python.c: cutaway._cwspans, the C path of cutaway.spans (src/cutaway/spans.py).
 *
 * A Python span through the pure-Python writer costs about a microsecond, most of it the
 * interpreter running the writer's code. This module hands each begin and end to the C span
 * writer instead, through native/include/cutaway/span.h as any C program would: under the
 * spans probe, span.h's constructor (run when Python loads this module) loads libcwspans.so
 * from CUTAWAY_SPANS_LIBRARY, and a span is then one C call on enter and one on exit. Without
 * that variable (or where the writer does not load), enabled() is 0 and cutaway.spans keeps
 * its pure-Python writer.
 *
 * The C writer knows a name by its address: every name's UTF-8 text (surrogateescape, as the
 * pure-Python writer encodes it) is kept in `names` for the life of the process, so that an
 * address is never reused for another name. A name is cut at its first NUL byte, as C names
 * end there.
 *
 * Exported to Python: enabled(), begin(name), end(name), and the type span(name), whose
 * __enter__ and __exit__ begin and end it (cutaway.spans subclasses it to add the decorator).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <structmember.h>

#define CUTAWAY_SPAN_IMPLEMENTATION
#include "cutaway/span.h"

static PyObject *cw_names; /* str -> bytes: the UTF-8 of every name used, never released */

/* The C text of `name`, kept in cw_names; NULL with an exception set. */
static const char *cw_text(PyObject *name) {
    PyObject *text = PyDict_GetItemWithError(cw_names, name); /* borrowed */
    if (text == NULL) {
        if (PyErr_Occurred()) return NULL;
        if (!PyUnicode_Check(name)) {
            PyErr_Format(PyExc_TypeError, "a span's name must be a str, not %.100s",
                         Py_TYPE(name)->tp_name);
            return NULL;
        }
        text = PyUnicode_AsEncodedString(name, "utf-8", "surrogateescape");
        if (text == NULL) return NULL;
        int failed = PyDict_SetItem(cw_names, name, text);
        Py_DECREF(text); /* cw_names holds it from here on */
        if (failed) return NULL;
    }
    return PyBytes_AS_STRING(text);
}

typedef struct {
    PyObject_HEAD
    PyObject *name;
    const char *text; /* owned by cw_names */
} cw_span_object;

static PyObject *cw_span_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"name", NULL};
    PyObject *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:span", keywords, &name)) return NULL;
    const char *text = cw_text(name);
    if (text == NULL) return NULL;
    cw_span_object *self = (cw_span_object *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    Py_INCREF(name);
    self->name = name;
    self->text = text;
    return (PyObject *)self;
}

/* (A Python subclass's instances come here through subtype_dealloc, which releases their
 * type itself, since this base type is static.) */
static void cw_span_dealloc(cw_span_object *self) {
    Py_XDECREF(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *cw_span_enter(cw_span_object *self, PyObject *unused) {
    (void)unused;
    cw_span_begin(self->text);
    Py_RETURN_NONE;
}

static PyObject *cw_span_exit(cw_span_object *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)args;
    (void)nargs; /* the exception, if any: a span ends however its block is left */
    cw_span_end(self->text);
    Py_RETURN_NONE;
}

static PyMethodDef cw_span_methods[] = {
    {"__enter__", (PyCFunction)cw_span_enter, METH_NOARGS, "Begin the span."},
    {"__exit__", (PyCFunction)(void (*)(void))cw_span_exit, METH_FASTCALL, "End the span."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef cw_span_members[] = {
    {"name", T_OBJECT_EX, offsetof(cw_span_object, name), READONLY, "the span's name"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject cw_span_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cutaway._cwspans.span",
    .tp_basicsize = sizeof(cw_span_object),
    .tp_dealloc = (destructor)cw_span_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A span around a block: with span(name): ...",
    .tp_methods = cw_span_methods,
    .tp_members = cw_span_members,
    .tp_new = cw_span_new,
};

static PyObject *cw_begin(PyObject *module, PyObject *name) {
    (void)module;
    const char *text = cw_text(name);
    if (text == NULL) return NULL;
    cw_span_begin(text);
    Py_RETURN_NONE;
}

static PyObject *cw_end(PyObject *module, PyObject *name) {
    (void)module;
    const char *text = cw_text(name);
    if (text == NULL) return NULL;
    cw_span_end(text);
    Py_RETURN_NONE;
}

static PyObject *cw_enabled(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyBool_FromLong(cw_span_enabled());
}

static PyMethodDef cw_functions[] = {
    {"begin", cw_begin, METH_O, "Start the span `name` in this thread."},
    {"end", cw_end, METH_O, "End the innermost open span `name` of this thread."},
    {"enabled", cw_enabled, METH_NOARGS, "True when the C span writer is loaded."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef cw_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cutaway._cwspans",
    .m_doc = "The C path of cutaway.spans: spans written by libcwspans.so.",
    .m_size = -1,
    .m_methods = cw_functions,
};

PyMODINIT_FUNC PyInit__cwspans(void) {
    if (PyType_Ready(&cw_span_type) < 0) return NULL;
    PyObject *module = PyModule_Create(&cw_module);
    if (module == NULL) return NULL;
    cw_names = PyDict_New();
    if (cw_names == NULL || PyModule_AddObjectRef(module, "span", (PyObject *)&cw_span_type) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
