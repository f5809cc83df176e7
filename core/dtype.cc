#include "core/dtype.h"

#include <fmt/format.h>

namespace ccscope::core {

size_t dataTypeSize(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kUint8:
      return 1;
    case DataType::kHalf:
    case DataType::kBfloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kFloat:
      return 4;
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kDouble:
      return 8;
  }
  return 1;
}

const char* dataTypeName(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return "int8";
    case DataType::kUint8:
      return "uint8";
    case DataType::kInt32:
      return "int32";
    case DataType::kUint32:
      return "uint32";
    case DataType::kInt64:
      return "int64";
    case DataType::kUint64:
      return "uint64";
    case DataType::kHalf:
      return "half";
    case DataType::kBfloat16:
      return "bfloat16";
    case DataType::kFloat:
      return "float";
    case DataType::kDouble:
      return "double";
  }
  return "?";
}

const char* reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kAvg:
      return "avg";
  }
  return "?";
}

Result<DataType> parseDataType(std::string_view s) {
  for (DataType t : kAllDataTypes)
    if (s == dataTypeName(t)) return t;
  if (s == "fp16" || s == "float16") return DataType::kHalf;
  if (s == "bf16") return DataType::kBfloat16;
  if (s == "fp32" || s == "float32") return DataType::kFloat;
  if (s == "fp64" || s == "float64") return DataType::kDouble;
  return Status(Code::kInvalidArgument,
                fmt::format("unknown dtype '{}' (int8, uint8, int32, uint32, int64, uint64, half, "
                            "bfloat16, float, double, or all)",
                            s));
}

Result<ReduceOp> parseReduceOp(std::string_view s) {
  for (ReduceOp op : kAllReduceOps)
    if (s == reduceOpName(op)) return op;
  return Status(Code::kInvalidArgument,
                fmt::format("unknown op '{}' (sum, prod, min, max, avg, or all)", s));
}

template <typename T, typename Parse, size_t N>
static Result<std::vector<T>> parseList(std::string_view s, Parse parse, const T (&all)[N]) {
  if (s == "all") return std::vector<T>(std::begin(all), std::end(all));
  std::vector<T> out;
  while (true) {
    size_t comma = s.find(',');
    auto item = parse(s.substr(0, comma));
    if (!item) return item.takeStatus();
    out.push_back(*item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

Result<std::vector<DataType>> parseDataTypeList(std::string_view s) {
  return parseList<DataType>(s, parseDataType, kAllDataTypes);
}
Result<std::vector<ReduceOp>> parseReduceOpList(std::string_view s) {
  return parseList<ReduceOp>(s, parseReduceOp, kAllReduceOps);
}

}  // namespace ccscope::core
