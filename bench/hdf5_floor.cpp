// The HDF5 floor: split and merge with the fewest libhdf5 calls that can do
// the job, and nothing else — no spec, no checks beyond comparing attribute
// bytes, no manifest, no atomic outputs, every dataset read whole, default
// creation properties. No real tool can do less library work, so for a
// workload dominated by libhdf5 (tens of thousands of tiny datasets,
// variable-length strings) its time bounds what microbatch can reach; it is
// a measuring stick for bench/bench.py, not a tool.
//
//   hdf5_floor split INPUT.h5 N OUTDIR     (cut every dataset along axis 0)
//   hdf5_floor merge OUTPUT.h5 FILE...     (concatenate along axis 0)
#include <hdf5.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

herr_t collect(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

// A group's members in name order. The walk holds each group open while it
// visits the members, so that their lookups find the group's index cached.
std::vector<std::string> members(hid_t group) {
  std::vector<std::string> names;
  H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names);
  return names;
}

void need(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "hdf5_floor: %s failed\n", what.c_str());
    std::exit(1);
  }
}

struct Attribute {
  std::string name;
  hid_t type, space;
  std::vector<unsigned char> bytes;
};

herr_t read_one_attribute(hid_t object, const char* name, const H5A_info_t*, void* data) {
  Attribute a{name, -1, -1, {}};
  const hid_t attr = H5Aopen(object, name, H5P_DEFAULT);
  a.type = H5Aget_type(attr);
  a.space = H5Aget_space(attr);
  a.bytes.resize(H5Tget_size(a.type) * std::max<hssize_t>(H5Sget_simple_extent_npoints(a.space), 1));
  need(H5Aread(attr, a.type, a.bytes.data()) >= 0, std::string("reading attribute ") + name);
  H5Aclose(attr);
  static_cast<std::vector<Attribute>*>(data)->push_back(std::move(a));
  return 0;
}

std::vector<Attribute> read_attributes(hid_t object) {
  std::vector<Attribute> out;
  H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, nullptr, read_one_attribute, &out);
  return out;
}

void write_attributes(hid_t object, const std::vector<Attribute>& attributes) {
  for (const auto& a : attributes) {
    const hid_t attr = H5Acreate2(object, a.name.c_str(), a.type, a.space, H5P_DEFAULT, H5P_DEFAULT);
    need(attr >= 0 && H5Awrite(attr, a.type, a.bytes.data()) >= 0, "writing attribute " + a.name);
    H5Aclose(attr);
  }
}

void release(std::vector<Attribute>& attributes) {
  for (auto& a : attributes) {
    H5Tclose(a.type);
    H5Sclose(a.space);
  }
}

// A whole dataset in memory, in its own datatype.
struct Data {
  hid_t type = -1;
  std::vector<hsize_t> dims;
  std::vector<unsigned char> bytes;
  std::size_t row_bytes() const {
    std::size_t n = H5Tget_size(type);
    for (std::size_t d = 1; d < dims.size(); ++d) n *= dims[d];
    return n;
  }
};

Data read_whole(hid_t dataset) {
  Data d;
  d.type = H5Dget_type(dataset);
  const hid_t space = H5Dget_space(dataset);
  d.dims.resize(static_cast<std::size_t>(std::max(H5Sget_simple_extent_ndims(space), 0)));
  H5Sget_simple_extent_dims(space, d.dims.data(), nullptr);
  d.bytes.resize(H5Tget_size(d.type) * std::max<hssize_t>(H5Sget_simple_extent_npoints(space), 1));
  need(H5Dread(dataset, d.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.bytes.data()) >= 0, "reading a dataset");
  H5Sclose(space);
  return d;
}

// Creates `name` holding `rows` rows of `d` from `first`; returns it open.
hid_t write_rows(hid_t parent, const std::string& name, const Data& d, hsize_t rows, const unsigned char* first) {
  std::vector<hsize_t> dims = d.dims;
  if (!dims.empty()) dims[0] = rows;
  const hid_t space = dims.empty() ? H5Screate(H5S_SCALAR)
                                   : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t ds = H5Dcreate2(parent, name.c_str(), d.type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  need(ds >= 0, "creating " + name);
  if (dims.empty() || rows > 0) need(H5Dwrite(ds, d.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, first) >= 0, "writing " + name);
  H5Sclose(space);
  return ds;
}

void release(Data& d) {
  if (H5Tdetect_class(d.type, H5T_VLEN) > 0 || H5Tis_variable_str(d.type) > 0) {
    const hsize_t n = d.bytes.size() / H5Tget_size(d.type);
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    H5Dvlen_reclaim(d.type, space, H5P_DEFAULT, d.bytes.data());
    H5Sclose(space);
  }
  H5Tclose(d.type);
}

// Inputs drop each object's metadata when it is closed, as microbatch's do
// (faster than a cache that grows to hold the whole tree).
hid_t open_input(const char* path) {
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_evict_on_close(fapl, 1);
  const hid_t file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
  H5Pclose(fapl);
  need(file >= 0, std::string("opening ") + path);
  return file;
}

void split_group(hid_t src_group, const std::vector<hid_t>& dst_groups) {
  const int n = static_cast<int>(dst_groups.size());
  for (const auto& name : members(src_group)) {
    const hid_t src = H5Oopen(src_group, name.c_str(), H5P_DEFAULT);
    need(src >= 0, "opening " + name);
    auto attributes = read_attributes(src);
    if (H5Iget_type(src) == H5I_GROUP) {
      std::vector<hid_t> created;
      for (const hid_t dst : dst_groups) {
        created.push_back(H5Gcreate2(dst, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        write_attributes(created.back(), attributes);
      }
      split_group(src, created);
      for (const hid_t g : created) H5Gclose(g);
    } else {
      Data d = read_whole(src);
      const hsize_t rows = d.dims.empty() ? 1 : d.dims[0];
      hsize_t at = 0;
      for (int i = 0; i < n; ++i) {  // numpy.array_split
        const hsize_t mine = d.dims.empty() ? 1 : rows / n + (static_cast<hsize_t>(i) < rows % n ? 1 : 0);
        const hid_t ds = write_rows(dst_groups[i], name, d, mine, d.bytes.data() + at * d.row_bytes());
        write_attributes(ds, attributes);
        H5Dclose(ds);
        if (!d.dims.empty()) at += mine;
      }
      release(d);
    }
    release(attributes);
    H5Oclose(src);
  }
}

int split(const char* input, int n, const std::string& dir) {
  const hid_t in = open_input(input);
  std::vector<hid_t> outs, roots;
  for (int i = 0; i < n; ++i) {
    outs.push_back(H5Fcreate((dir + "/floor-" + std::to_string(i) + ".h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT,
                             H5P_DEFAULT));
    need(outs.back() >= 0, "creating an output");
    roots.push_back(H5Gopen2(outs.back(), "/", H5P_DEFAULT));
  }
  const hid_t root = H5Gopen2(in, "/", H5P_DEFAULT);
  auto attributes = read_attributes(root);
  for (const hid_t r : roots) write_attributes(r, attributes);
  release(attributes);
  split_group(root, roots);
  H5Gclose(root);
  for (const hid_t r : roots) H5Gclose(r);
  for (const hid_t out : outs) need(H5Fclose(out) >= 0, "closing an output");
  H5Fclose(in);
  return 0;
}

// Reads every input's attributes of an object and compares them with the
// first's (replicated attributes must be equal); returns the first's.
std::vector<Attribute> checked_attributes(const std::vector<hid_t>& srcs) {
  auto attributes = read_attributes(srcs[0]);
  for (std::size_t i = 1; i < srcs.size(); ++i) {
    auto theirs = read_attributes(srcs[i]);
    for (std::size_t k = 0; k < theirs.size() && k < attributes.size(); ++k)
      need(theirs[k].bytes == attributes[k].bytes || H5Tis_variable_str(theirs[k].type) > 0,
           "equal attribute " + theirs[k].name);
    release(theirs);
  }
  return attributes;
}

void merge_group(const std::vector<hid_t>& src_groups, hid_t dst_group) {
  for (const auto& name : members(src_groups[0])) {
    std::vector<hid_t> srcs;
    for (const hid_t g : src_groups) {
      srcs.push_back(H5Oopen(g, name.c_str(), H5P_DEFAULT));
      need(srcs.back() >= 0, "opening " + name);
    }
    auto attributes = checked_attributes(srcs);
    hid_t created;
    if (H5Iget_type(srcs[0]) == H5I_GROUP) {
      created = H5Gcreate2(dst_group, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      merge_group(srcs, created);
    } else {
      Data all = read_whole(srcs[0]);
      for (std::size_t i = 1; i < srcs.size() && !all.dims.empty(); ++i) {
        Data d = read_whole(srcs[i]);
        all.bytes.insert(all.bytes.end(), d.bytes.begin(), d.bytes.end());
        all.dims[0] += d.dims[0];
        d.bytes.clear();  // its variable-length elements now belong to `all`
        H5Tclose(d.type);
      }
      created = write_rows(dst_group, name, all, all.dims.empty() ? 1 : all.dims[0], all.bytes.data());
      release(all);
    }
    write_attributes(created, attributes);
    H5Oclose(created);
    release(attributes);
    for (const hid_t s : srcs) H5Oclose(s);
  }
}

int merge(const char* output, const std::vector<const char*>& inputs) {
  std::vector<hid_t> ins, roots;
  for (const char* p : inputs) {
    ins.push_back(open_input(p));
    roots.push_back(H5Gopen2(ins.back(), "/", H5P_DEFAULT));
  }
  const hid_t out = H5Fcreate(output, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  need(out >= 0, "creating the output");
  const hid_t root = H5Gopen2(out, "/", H5P_DEFAULT);
  auto attributes = checked_attributes(roots);
  write_attributes(root, attributes);
  release(attributes);
  merge_group(roots, root);
  H5Gclose(root);
  need(H5Fclose(out) >= 0, "closing the output");
  for (const hid_t r : roots) H5Gclose(r);
  for (const hid_t in : ins) H5Fclose(in);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "split" && argc == 5) return split(argv[2], std::atoi(argv[3]), argv[4]);
  if (mode == "merge" && argc >= 4) return merge(argv[2], std::vector<const char*>(argv + 3, argv + argc));
  std::fprintf(stderr, "usage: hdf5_floor split INPUT.h5 N OUTDIR | hdf5_floor merge OUTPUT.h5 FILE...\n");
  return 2;
}
