#!/usr/bin/python3
"""Writes tests/npy_corpus/: .npy/.npz files for tests/test_npy.cpp.

Run with the system Python, which has numpy:  /usr/bin/python3 scripts/make_npy_corpus.py

  valid_*.npy / valid_*.npz   files written by numpy itself (numpy.save,
                              numpy.savez, numpy.savez_compressed, format
                              versions 1.0/2.0/3.0); each array is listed in
                              expected.txt with its dtype, shape and values.
  valid_ref_*.npy             plain numpy.save output: our writer must produce
                              exactly these bytes for the same array.
  bad_*.npy / bad_*.npz       broken or unsupported files: each must raise
                              ag::Error, never crash.

expected.txt has one line per array:
  <file> <key, or - for .npy> <dtype> <ndim> <dims...> <values...>
with values in C order: integers for int64/bool, Python float repr for floats.
"""
import io
import os
import struct
import time
import zipfile
import zlib

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "npy_corpus")


class _FixedClock:
    """zipfile stamps members with the current time; a fixed one makes reruns identical."""

    @staticmethod
    def time():
        return 0.0

    @staticmethod
    def localtime(_seconds=None):
        return time.struct_time((2024, 1, 1, 0, 0, 0, 0, 1, 0))


zipfile.time = _FixedClock

expected_lines = []


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def npy_bytes(array, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, array)
    else:
        np.lib.format.write_array(buf, array, version=version)
    return buf.getvalue()


def expect(file, key, array):
    """Records the values our loader must produce for `array` (int32 widens to int64)."""
    dtype = {"<f4": "float32", "<f8": "float64", "<i8": "int64", "<i4": "int64",
             "|b1": "bool"}[array.dtype.str]
    if dtype in ("float32", "float64"):
        values = [repr(float(v)) for v in array.ravel()]
    else:
        values = [str(int(v)) for v in array.ravel()]
    expected_lines.append(" ".join([file, key, dtype, str(array.ndim)] +
                                   [str(d) for d in array.shape] + values))


def valid_npy(name, array, version=None):
    write(name, npy_bytes(array, version))
    expect(name, "-", array)


def valid_npz(name, arrays, compressed=False):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    write(name, buf.getvalue())
    for key, array in arrays.items():
        expect(name, key, np.asarray(array))


# A header as numpy lays it out (magic, version, length, dict padded to 64 with
# '\n'), but with any dict text we like.
def raw_npy(header, data=b"", version=(1, 0), length=None):
    text = header.encode("latin1")
    fmt = "<H" if version[0] == 1 else "<I"
    prefix = 6 + 2 + struct.calcsize(fmt)
    pad = 64 - (prefix + len(text) + 1) % 64
    text += b" " * pad + b"\n"
    size = len(text) if length is None else length
    return b"\x93NUMPY" + bytes(version) + struct.pack(fmt, size) + text + data


def header(descr="<f4", fortran="False", shape="(2,)"):
    return "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)


# A hand-built zip, for the archives zipfile refuses to write. Each member is
# (name, stored bytes, method, crc, compressed size, uncompressed size).
def raw_zip(members, count=None, dir_offset_delta=0, disk=0):
    out = b""
    central = b""
    for name, data, method, crc, csize, usize in members:
        name = name.encode()
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, csize, usize,
                           len(name), 0) + name + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21, crc,
                               csize, usize, len(name), 0, 0, 0, 0, 0, offset) + name
    n = len(members) if count is None else count
    end = struct.pack("<IHHHHIIH", 0x06054B50, disk, 0, n, n, len(central),
                      len(out) + dir_offset_delta, 0)
    return out + central + end


def stored(name, data):
    return (name, data, 0, zlib.crc32(data), len(data), len(data))


def deflated(name, data, extra=b""):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = c.compress(data) + c.flush() + extra
    return (name, body, 8, zlib.crc32(data), len(body), len(data))


def patch(data, offset, new):
    return data[:offset] + new + data[offset + len(new):]


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))

    # ---- valid .npy: every dtype, 0-d, empty, all three format versions ----
    n = np.arange(6)
    valid_npy("valid_ref_f4.npy", (n * 0.5 - 1.25).astype("<f4").reshape(2, 3))
    valid_npy("valid_ref_f8.npy",
              np.array([0.1, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1e308], dtype="<f8"))
    valid_npy("valid_ref_i8.npy",
              np.array([[-(2**63), 2**63 - 1], [0, -1], [2**40 + 3, -7]], dtype="<i8"))
    valid_npy("valid_ref_b1.npy", (np.arange(8) % 3 == 0).reshape(2, 2, 2))
    valid_npy("valid_ref_0d.npy", np.array(3.5, dtype="<f8"))
    valid_npy("valid_ref_empty.npy", np.zeros((0,), dtype="<f4"))
    valid_npy("valid_ref_empty_2x0x3.npy", np.zeros((2, 0, 3), dtype="<i8"))
    valid_npy("valid_i4.npy", np.array([-(2**31), -1, 0, 7, 2**31 - 1], dtype="<i4"))
    valid_npy("valid_v2.npy", np.arange(3, dtype="<f8"), version=(2, 0))
    valid_npy("valid_v3.npy", np.arange(4, dtype="<f4").reshape(2, 2), version=(3, 0))
    # numpy treats any nonzero byte as True; the loader must normalise to 0/1.
    data = npy_bytes(np.zeros(4, dtype="|b1"))
    write("valid_bool_bytes.npy", data[:-4] + bytes([0, 1, 2, 255]))
    expect("valid_bool_bytes.npy", "-", np.array([False, True, True, True]))
    # Double quotes and no padding are legal Python and legal numpy.
    write("valid_handmade_header.npy",
          raw_npy('{"shape":(2,),"fortran_order":False,"descr":"<i8"}',
                  np.array([5, -5], dtype="<i8").tobytes()))
    expect("valid_handmade_header.npy", "-", np.array([5, -5], dtype="<i8"))

    # ---- valid .npz ----
    valid_npz("valid_savez.npz", {
        "layer.0.weight": (n * 0.25).astype("<f4").reshape(3, 2),
        "lengths": np.array([3, 1, 4], dtype="<i8"),
        "mask": np.array([True, False, True]),
        "scale": np.array(2.5, dtype="<f8"),
        "empty": np.zeros((0, 2), dtype="<f4"),
        "\u03b1": np.array([1.0], dtype="<f8"),  # non-ASCII names are stored as UTF-8
    })
    valid_npz("valid_savez_compressed.npz", {
        "x": (np.arange(64) % 5).astype("<f4").reshape(8, 8),
        "ids": np.arange(10, dtype="<i8"),
    }, compressed=True)
    buf = io.BytesIO()
    np.savez(buf, np.array([1.5], dtype="<f4"), np.array([2], dtype="<i8"))
    write("valid_savez_positional.npz", buf.getvalue())
    expect("valid_savez_positional.npz", "arr_0", np.array([1.5], dtype="<f4"))
    expect("valid_savez_positional.npz", "arr_1", np.array([2], dtype="<i8"))
    valid_npz("valid_savez_empty_archive.npz", {})
    # Zip64 records, as numpy writes them for arrays over 2 GiB: shrink the
    # limit so that a small array gets them.
    saved_limit = zipfile.ZIP64_LIMIT
    zipfile.ZIP64_LIMIT = 16
    valid_npz("valid_zip64.npz", {"a": np.arange(3, dtype="<f8")})
    zipfile.ZIP64_LIMIT = saved_limit

    # ---- broken .npy ----
    good = npy_bytes(np.array([1.0, 2.0], dtype="<f4"))
    write("bad_empty.npy", b"")
    write("bad_magic.npy", b"\x93NUMPX" + good[6:])
    write("bad_version_4.npy", good[:6] + b"\x04\x00" + good[8:])
    write("bad_version_1_1.npy", good[:6] + b"\x01\x01" + good[8:])
    write("bad_truncated_magic.npy", good[:4])
    write("bad_truncated_length.npy", good[:9])
    write("bad_truncated_header.npy", good[:40])
    write("bad_truncated_data.npy", good[:-1])
    write("bad_extra_data.npy", good + b"\x00")
    write("bad_fortran.npy", npy_bytes(np.asfortranarray(np.zeros((2, 2), dtype="<f4"))))
    write("bad_big_endian.npy", npy_bytes(np.array([1.0], dtype=">f4")))
    write("bad_object.npy", npy_bytes(np.array([None], dtype=object)))
    write("bad_u2.npy", npy_bytes(np.array([1, 2], dtype="<u2")))
    write("bad_u1.npy", npy_bytes(np.array([1, 2], dtype="|u1")))
    write("bad_f2.npy", npy_bytes(np.array([1, 2], dtype="<f2")))
    write("bad_native_order.npy", raw_npy(header("=f4"), b"\0" * 8))
    write("bad_structured.npy", npy_bytes(np.zeros(1, dtype=[("a", "<f4")])))
    write("bad_header_not_dict.npy", raw_npy("[1, 2]", b"\0" * 8))
    write("bad_header_missing_key.npy",
          raw_npy("{'descr': '<f4', 'shape': (2,), }", b"\0" * 8))
    write("bad_header_extra_key.npy",
          raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", b"\0" * 8))
    write("bad_header_duplicate_key.npy",
          raw_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
                  b"\0" * 8))
    write("bad_header_unterminated.npy", raw_npy("{'descr': '<f4, 'shape': (2,)}", b"\0" * 8))
    write("bad_header_no_brace.npy", raw_npy(header()[:-1], b"\0" * 8))
    write("bad_header_no_newline.npy", patch(good, len(good) - 8 - 1, b" "))  # 8 data bytes
    write("bad_header_garbage_after.npy", raw_npy(header() + " x", b"\0" * 8))
    write("bad_header_shape_not_tuple.npy", raw_npy(header(shape="(2)"), b"\0" * 8))
    write("bad_header_shape_list.npy", raw_npy(header(shape="[2]"), b"\0" * 8))
    write("bad_header_shape_negative.npy", raw_npy(header(shape="(-2,)"), b"\0" * 8))
    write("bad_header_shape_float.npy", raw_npy(header(shape="(2.0,)"), b"\0" * 8))
    write("bad_header_shape_empty_item.npy", raw_npy(header(shape="(,)"), b""))
    write("bad_header_fortran_string.npy", raw_npy(header(fortran="'False'"), b"\0" * 8))
    write("bad_header_length_huge.npy", raw_npy(header(), b"\0" * 8, length=0xFFFF))
    write("bad_header_length_huge_v2.npy",
          raw_npy(header(), b"\0" * 8, version=(2, 0), length=0xFFFFFFFF))
    write("bad_shape_mismatch.npy", raw_npy(header(shape="(3,)"), b"\0" * 8))
    write("bad_shape_overflow.npy", raw_npy(header(shape="(4611686018427387904, 4)"), b"\0" * 8))
    write("bad_shape_overflow_zero.npy",
          raw_npy(header(shape="(4611686018427387904, 4611686018427387904, 0)"), b""))
    write("bad_shape_huge.npy", raw_npy(header(shape="(1099511627776,)"), b"\0" * 8))
    write("bad_shape_int_too_big.npy",
          raw_npy(header(shape="(99999999999999999999,)"), b"\0" * 8))
    write("bad_shape_too_many_dims.npy", raw_npy(header(shape="(" + "1, " * 65 + ")"), b"\0" * 4))

    # ---- broken .npz ----
    buf = io.BytesIO()
    np.savez(buf, a=np.array([1.0, 2.0], dtype="<f4"))
    savez = buf.getvalue()
    buf = io.BytesIO()
    np.savez_compressed(buf, a=np.zeros(64, dtype="<f4"))
    compressed = buf.getvalue()
    cd = savez.rindex(b"PK\x01\x02")
    eocd = savez.rindex(b"PK\x05\x06")
    write("bad_zip_empty.npz", b"")
    write("bad_zip_not_zip.npz", good)
    write("bad_zip_truncated_half.npz", savez[: len(savez) // 2])
    write("bad_zip_truncated_in_directory.npz", savez[: cd + 20])
    write("bad_zip_truncated_end_record.npz", savez[:-1])
    write("bad_zip_crc.npz", patch(savez, cd - 1, b"\x07"))
    crc = struct.unpack_from("<I", savez, 14)[0] ^ 1
    write("bad_zip_crc_field.npz", patch(patch(savez, 14, struct.pack("<I", crc)), cd + 16,
                                         struct.pack("<I", crc)))
    write("bad_zip_local_signature.npz", patch(savez, 0, b"PK\x03\x05"))
    write("bad_zip_central_signature.npz", patch(savez, cd, b"PK\x01\x03"))
    write("bad_zip_local_name.npz", patch(savez, 30, b"b"))
    write("bad_zip_count.npz", patch(patch(savez, eocd + 8, b"\x02\x00"), eocd + 10, b"\x02\x00"))
    write("bad_zip_directory_offset.npz", patch(savez, eocd + 16, struct.pack("<I", cd - 1)))
    write("bad_zip_multidisk.npz", patch(savez, eocd + 4, b"\x01\x00"))
    write("bad_zip_zip64_marker.npz", patch(savez, eocd + 16, b"\xff\xff\xff\xff"))
    huge = struct.pack("<I", 0x7FFFFFFF)
    write("bad_zip_compressed_size_huge.npz", patch(patch(savez, 18, huge), cd + 20, huge))
    write("bad_zip_deflate_corrupt.npz", patch(compressed, 60, b"\xff\xff\xff\xff"))
    arr = npy_bytes(np.array([1.0, 2.0], dtype="<f4"))
    write("bad_zip_uncompressed_size_huge.npz",
          raw_zip([deflated("a.npy", arr)[:5] + (0xFFFFFFF0,)]))
    write("bad_zip_uncompressed_size_larger.npz",
          raw_zip([deflated("a.npy", arr)[:5] + (len(arr) + 1,)]))
    write("bad_zip_uncompressed_size_smaller.npz",
          raw_zip([deflated("a.npy", arr)[:5] + (len(arr) - 1,)]))
    name, body, method, crc, _, usize = deflated("a.npy", arr)
    write("bad_zip_deflate_truncated.npz",
          raw_zip([(name, body[:-3], method, crc, len(body) - 3, usize)]))
    write("bad_zip_deflate_trailing.npz", raw_zip([deflated("a.npy", arr, extra=b"xy")]))
    write("bad_zip_stored_sizes_differ.npz", raw_zip([stored("a.npy", arr)[:5] + (len(arr) - 1,)]))
    write("bad_zip_duplicate.npz", raw_zip([stored("a.npy", arr), stored("a.npy", arr)]))
    write("bad_zip_not_npy.npz", raw_zip([stored("a.txt", arr)]))
    write("bad_zip_entry_not_npy_data.npz", raw_zip([stored("a.npy", b"hello")]))
    write("bad_zip_entry_bad_dtype.npz",
          raw_zip([stored("a.npy", npy_bytes(np.array([1], dtype="<u2")))]))
    write("bad_zip_method.npz", raw_zip([stored("a.npy", arr)[:2] + (12,) + stored("a.npy", arr)[3:]]))
    enc = raw_zip([stored("a.npy", arr)])
    enc_cd = enc.rindex(b"PK\x01\x02")
    write("bad_zip_encrypted.npz", patch(patch(enc, 6, b"\x01\x00"), enc_cd + 8, b"\x01\x00"))
    # Two members whose byte ranges overlap (a deflated member claims 8 more bytes).
    first = deflated("a.npy", arr)
    write("bad_zip_overlap.npz",
          raw_zip([first[:4] + (first[4] + 8,) + first[5:], stored("b.npy", arr)]))
    write("bad_zip_directory_gap.npz", raw_zip([stored("a.npy", arr)], dir_offset_delta=-4))

    with open(os.path.join(OUT, "expected.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(expected_lines) + "\n")


if __name__ == "__main__":
    main()
