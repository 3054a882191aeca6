# Protobuf and gRPC code generation: tessel_proto_library(<name> PROTOS a.proto ... [GRPC])
# generates C++ into the build tree and makes a static library target <name> to link against.
function(tessel_proto_library name)
  cmake_parse_arguments(ARG "GRPC" "" "PROTOS" ${ARGN})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/gen)
  file(MAKE_DIRECTORY ${out})
  set(srcs)
  foreach(proto ${ARG_PROTOS})
    get_filename_component(abs ${proto} ABSOLUTE)
    file(RELATIVE_PATH rel ${CMAKE_CURRENT_SOURCE_DIR} ${abs})
    string(REGEX REPLACE "\\.proto$" "" base ${rel})
    set(gen ${out}/${base}.pb.cc ${out}/${base}.pb.h)
    set(args --cpp_out=${out})
    if(ARG_GRPC)
      list(APPEND gen ${out}/${base}.grpc.pb.cc ${out}/${base}.grpc.pb.h)
      list(APPEND args --grpc_out=${out} --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>)
    endif()
    add_custom_command(
      OUTPUT ${gen}
      COMMAND protobuf::protoc -I ${CMAKE_CURRENT_SOURCE_DIR} ${args} ${rel}
      DEPENDS ${abs} protobuf::protoc
      WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
      COMMENT "protoc ${rel}")
    list(APPEND srcs ${gen})
  endforeach()
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} PUBLIC ${out})
  target_link_libraries(${name} PUBLIC protobuf::libprotobuf)
  if(ARG_GRPC)
    target_link_libraries(${name} PUBLIC gRPC::grpc++)
  endif()
endfunction()
